#!/usr/bin/env python3
"""Copies the Lua scripts of src/lock/lua/ into docs/PROTOCOL.md.

Each script's section ("### NAME", the prelude's "### Prelude ...") quotes what rlock
sends: the part of src/lock/lua/NAME.lua after its "-- >8 --" line. This rewrites the first
```lua block under each such heading with that text; tests/unit/protocol_doc_test.cc
fails when the two differ, so run this after changing a script:

    python3 tests/helpers/protocol_doc.py [--check]

--check changes nothing and exits 1 if the document is out of date.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "PROTOCOL.md"
LUA = ROOT / "src" / "lock" / "lua"
MARK = "-- >8 --"


def sent_text(path):
    text = path.read_text()
    at = text.index(MARK)
    return text[text.index("\n", at) + 1:].strip("\n") + "\n"


def main():
    check = sys.argv[1:] == ["--check"]
    doc = DOC.read_text()
    out = doc
    for path in sorted(LUA.glob("*.lua")):
        name = path.stem
        heading = r"### Prelude[^\n]*" if name == "prelude" else r"### " + re.escape(name)
        pattern = re.compile(r"(^" + heading + r"\n(?:(?!^### ).)*?```lua\n)(.*?)(^```)",
                             re.S | re.M)
        out, n = pattern.subn(lambda m: m.group(1) + sent_text(path) + m.group(3), out, count=1)
        if n != 1:
            sys.exit(f"protocol-doc: no ```lua block under a '### {name}' heading in {DOC}")
    if check:
        sys.exit(0 if out == doc else "protocol-doc: docs/PROTOCOL.md is out of date")
    if out != doc:
        DOC.write_text(out)
        print("protocol-doc: docs/PROTOCOL.md updated")


if __name__ == "__main__":
    main()
