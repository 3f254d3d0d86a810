#!/usr/bin/env python3
"""The layer check: a source file under src/ includes only headers of its own folder or of
a lower layer (HACKING.md "The tree"). Lowest first:

    core  <  net, proc  <  lock  <  hold  <  cli  <  commands  <  app

net and proc are side by side: neither includes the other. The generated headers of the
Lua scripts (lua_scripts.h) and of the Functions library (functions_library.h) belong to lock, the guard program's (guard_program.h) to proc. Prints one line per offending include and
exits 1 if there is any; usage: layers.py [SRC_DIR]."""
import os
import re
import sys

RANK = {"core": 0, "net": 1, "proc": 1, "lock": 2, "hold": 3, "cli": 4, "commands": 5, "app": 6}
GENERATED = {"lua_scripts.h": "lock", "functions_library.h": "lock", "guard_program.h": "proc"}


def layer_of_include(inc):
    if inc in GENERATED:
        return GENERATED[inc]
    if "/" in inc:
        return inc.split("/", 1)[0]
    return None


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../src")
    bad = []
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            bad.append(f"src/{folder}: a source file outside the layer folders")
            continue
        if folder not in RANK:
            bad.append(f"src/{folder}/: not a layer (add it to tests/helpers/layers.py and HACKING.md)")
            continue
        for root, _, files in os.walk(path):
            for f in sorted(files):
                if not f.endswith((".h", ".cc", ".lua")):
                    bad.append(f"{os.path.join(root, f)}: not a source file")
                    continue
                if f.endswith(".lua"):
                    continue
                rel = os.path.relpath(os.path.join(root, f), os.path.dirname(src))
                for n, line in enumerate(open(os.path.join(root, f), encoding="utf-8"), 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    inc = m.group(1)
                    to = layer_of_include(inc)
                    if to is None:
                        bad.append(f"{rel}:{n}: includes \"{inc}\" without its folder")
                    elif to not in RANK:
                        bad.append(f"{rel}:{n}: includes \"{inc}\" from no layer")
                    elif to != folder and RANK[to] >= RANK[folder]:
                        bad.append(f"{rel}:{n}: {folder} includes \"{inc}\" ({to} is not below {folder})")
    for b in bad:
        print(b)
    if bad:
        print(f"layers: {len(bad)} include(s) against the layer order", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
