#!/usr/bin/env python3
"""rlock's JSON output and its one schema, docs/json-output.json.

  json_schema.py validate OBJECT [--array | --lines] [FILE]
      checks JSON (FILE, else standard input) against OBJECT of the schema: one
      object, an array of them (--array), or one object a line (--lines). Every
      field must be known, of its type (and among its values, where the schema
      lists them), and a field without "absent" must be there. Exit 1 with one
      line per fault.
  json_schema.py --check      the man page's JSON OUTPUT section is the schema's (exit 1 if not)
  json_schema.py [--write]    writes that section into man/rlock.1
"""
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMA = os.path.join(ROOT, "docs", "json-output.json")
MAN = os.path.join(ROOT, "man", "rlock.1")
BEGIN = '.\\" BEGIN json-output (made from docs/json-output.json by tests/helpers/json_schema.py)'
END = '.\\" END json-output'


def load():
    with open(SCHEMA, encoding="utf-8") as f:
        return json.load(f)["objects"]


def check_value(objects, typ, value, where, faults):
    if typ.startswith("[") and typ.endswith("]"):
        if not isinstance(value, list):
            faults.append(f"{where}: not an array")
            return
        for i, v in enumerate(value):
            check_value(objects, typ[1:-1], v, f"{where}[{i}]", faults)
    elif typ == "{string}":
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            faults.append(f"{where}: not an object of strings")
    elif typ == "string":
        if not isinstance(value, str):
            faults.append(f"{where}: not a string: {value!r}")
    elif typ == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            faults.append(f"{where}: not an integer: {value!r}")
    elif typ == "boolean":
        if not isinstance(value, bool):
            faults.append(f"{where}: not a boolean: {value!r}")
    elif typ == "true":
        if value is not True:
            faults.append(f"{where}: not true: {value!r}")
    elif typ in objects:
        check_object(objects, typ, value, where, faults)
    else:
        faults.append(f"{where}: the schema's type {typ!r} is unknown")


def check_object(objects, name, value, where, faults):
    if not isinstance(value, dict):
        faults.append(f"{where}: not an object ({name})")
        return
    fields = objects[name]["fields"]
    for k, v in value.items():
        spec = fields.get(k)
        if spec is None:
            faults.append(f"{where}.{k}: not a field of {name}")
            continue
        check_value(objects, spec["type"], v, f"{where}.{k}", faults)
        if "enum" in spec and v not in spec["enum"]:
            faults.append(f"{where}.{k}: {v!r} is none of {spec['enum']}")
    for k, spec in fields.items():
        if "absent" not in spec and k not in value:
            faults.append(f"{where}: {name} without {k}")


def validate(args):
    objects = load()
    name, form, path = args[0], None, None
    for a in args[1:]:
        if a in ("--array", "--lines"):
            form = a
        else:
            path = a
    if name not in objects:
        sys.exit(f"json_schema.py: no object {name!r} in the schema")
    text = open(path, encoding="utf-8").read() if path else sys.stdin.read()
    faults = []
    try:
        if form == "--lines":
            docs = [json.loads(l) for l in text.splitlines() if l.strip()]
            if not docs:
                faults.append("no line")
        elif form == "--array":
            docs = json.loads(text)
            if not isinstance(docs, list):
                faults.append("not an array")
                docs = []
        else:
            docs = [json.loads(text)]
    except ValueError as e:
        print(f"not JSON: {e}: {text[:200]!r}")
        return 1
    for i, d in enumerate(docs):
        check_object(objects, name, d, f"{name}#{i}", faults)
    for f in faults:
        print(f)
    return 1 if faults else 0


def roff(text):
    """Text for a roff line: backslashes, dashes and a leading dot or quote escaped."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_section():
    objects = load()
    out = [BEGIN]
    for name, obj in objects.items():
        out.append(f".SS {name}")
        out.append(roff(f"Printed {obj['printed']}."))
        for k, spec in obj["fields"].items():
            kind = spec["type"]
            if "enum" in spec:
                kind += ": " + ", ".join(spec["enum"])
            out.append(".TP")
            out.append(f'.BR "{roff(k)}" " ({roff(kind)})"')
            when = f" Absent {spec['absent']}." if "absent" in spec else ""
            out.append(roff(spec["doc"][0].upper() + spec["doc"][1:] + "." + when))
    out.append(END)
    return "\n".join(out) + "\n"


def with_section(man):
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END) + r"\n", re.S)
    if not pattern.search(man):
        sys.exit(f"json_schema.py: no {BEGIN!r} ... {END!r} in {MAN}")
    return pattern.sub(lambda _: man_section(), man, count=1)


def main(argv):
    if argv[:1] == ["validate"] and len(argv) >= 2:
        return validate(argv[1:])
    with open(MAN, encoding="utf-8") as f:
        man = f.read()
    new = with_section(man)
    if argv[:1] == ["--check"]:
        if new != man:
            print("man/rlock.1's JSON OUTPUT section differs from docs/json-output.json: "
                  "run tests/helpers/json_schema.py")
            return 1
        return 0
    if argv and argv[:1] != ["--write"]:
        print(__doc__)
        return 64
    if new != man:
        with open(MAN, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
