#!/usr/bin/env python3
"""The preflight check: a script that asks the ACL first (prelude.lua's ask, one call per command,
docs/PROTOCOL.md "Nothing half-written") names every command it may run with redis.call, itself or
through the prelude's functions it calls, so that no command refused half-way leaves a write
behind; and every ask passes the arguments after the key that make its command whole (ARGS):
the server reads the key positions from them.

Not counted: TIME (read before anything, on no key), PUBLISH (the scripts publish before they
write, so that a refused channel names itself) and what goes through redis.pcall or hcall
(best effort: their errors are caught). A function of the prelude counts when the script names
it, or names a function that calls it. Prints one line per script that lacks a command and
exits 1 if there is any; usage: preflight.py [LUA_DIR]."""
import os
import re
import sys

NOT_ASKED = {"TIME", "PUBLISH"}
CALL = re.compile(r"redis\.call\(\s*'([A-Za-z]+)'")
FUNC = re.compile(r"^local function (\w+)\(", re.M)
WORD = re.compile(r"\b(\w+)\b")
ASK = re.compile(r"\bask\(\s*'([A-Za-z]+)'((?:\s*,\s*'[^']*')*)\s*\)")
# The arguments after the key each asked command is given: what makes it a whole command (DEL
# and EXISTS take keys: given more, the server would ask about those as keys too).
ARGS = {"PEXPIRE": 1, "HSET": 2, "HSETNX": 2, "HDEL": 1, "HGET": 1, "HMGET": 1, "HEXISTS": 1,
        "SET": 1, "ZADD": 2, "ZREM": 1, "ZSCORE": 1, "ZRANK": 1, "ZRANGE": 2, "ZRANGEBYSCORE": 2,
        "ZREMRANGEBYSCORE": 2, "ZCOUNT": 2, "PERSIST": 0, "INCR": 0, "DEL": 0, "GET": 0,
        "EXISTS": 0, "PTTL": 0, "ZCARD": 0, "HLEN": 0, "HGETALL": 0}


def strip_comments(text):
    return re.sub(r"--[^\n]*", "", text)


def prelude_functions(text):
    """{name: (commands it calls itself, words of its body)} for each top-level function."""
    out = {}
    starts = [(m.start(), m.group(1)) for m in FUNC.finditer(text)]
    for i, (pos, name) in enumerate(starts):
        # A top-level function ends at the first line that is exactly "end".
        end = re.search(r"^end\b", text[pos:], re.M)
        body = text[pos : pos + end.end()] if end else text[pos:]
        body = body.split("\n", 1)[1] if "\n" in body else ""
        out[name] = ({c.upper() for c in CALL.findall(body)}, set(WORD.findall(body)))
    return out


def reached(words, funcs):
    """The commands of every prelude function `words` names, transitively."""
    seen, todo, cmds = set(), [w for w in words if w in funcs], set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        own, body = funcs[f]
        cmds |= own
        todo += [w for w in body if w in funcs and w not in seen]
    return cmds


def main():
    lua = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../src/lock/lua")
    prelude = strip_comments(open(os.path.join(lua, "prelude.lua")).read())
    funcs = prelude_functions(prelude)
    bad, checked = [], 0
    for name in sorted(os.listdir(lua)):
        if not name.endswith(".lua") or name == "prelude.lua":
            continue
        text = strip_comments(open(os.path.join(lua, name)).read())
        asked = set()
        for m in ASK.finditer(text):
            cmd, nargs = m.group(1), len(re.findall(r"'[^']*'", m.group(2)))
            asked.add(cmd)
            if ARGS.get(cmd) != nargs:
                want = "a command ARGS does not know" if cmd not in ARGS else f"{ARGS[cmd]} arguments"
                bad.append(f"{name}: ask('{cmd}') with {nargs} arguments after the key: {want}")
        if not asked:
            continue  # a script that reads only, or of another layout: nothing to compare
        checked += 1
        calls = {c.upper() for c in CALL.findall(text)} | reached(WORD.findall(text), funcs)
        missing = sorted(calls - asked - NOT_ASKED)
        if missing:
            bad.append(f"{name}: asks lack {' '.join(missing)}")
    for line in bad:
        print(line)
    if checked == 0:
        print(f"no script with a preflight found under {lua}")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
