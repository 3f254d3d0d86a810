#!/usr/bin/env python3
"""rlock's scripts as rlock sends them, and their SHA-1s (bench/ only): each script's body
(src/lock/lua/NAME.lua after its `>8` line) after the part of the prelude it uses, cut as
cmake/cut_prelude.cmake cuts it (that file is the rule; this is a copy for the bench
tools, which name rlock's EVALSHA calls by their SHA-1). shas() also knows the SHA-1s of
the scripts sent after the whole prelude, as rlock did before the cut, so that the
tools read a MONITOR capture of either build.

Usage: sent_scripts.py NAME   prints the script NAME as rlock sends it
"""
import hashlib
import re
import sys
from pathlib import Path

LUA = Path(__file__).resolve().parent.parent / 'src' / 'lock' / 'lua'
NAMES = ('acquire', 'extend', 'release', 'leave', 'undo', 'status', 'break', 'forget',
         'fence', 'history', 'nest', 'list')
IDENT = r'[A-Za-z_][A-Za-z0-9_]*'


def sent_part(path):
    """The file from the newline that ends its `>8` line on."""
    text = path.read_text()
    return text[text.index('\n', text.index('\n-- >8 --') + 1):]


def chunks(prelude):
    """[(text, names)]: names None for the chunks every script keeps."""
    out, cur, names, pending, first = [], '', None, '', True
    for line in prelude.splitlines(keepends=True):
        start, new = False, None
        if re.match(r'local[ \t]', line):
            start = True
            m = (re.match(r'local[ \t]+function[ \t]+(' + IDENT + ')', line) or
                 re.match(r'local[ \t]+(' + IDENT + r'(?:[ \t]*,[ \t]*' + IDENT + ')*)', line))
            new = re.findall(IDENT, m.group(1))
        elif re.match(r'(end|else|elseif|until)(\W|$)', line):
            pass
        elif re.match(r'[A-Za-z_]', line):
            start = True
        if start:
            if first:
                cur, pending, first = cur + pending, '', False
            out.append((cur, names))
            cur, names, pending = pending + line, new, ''
        elif line.startswith('--'):
            pending += line
        else:
            cur, pending = cur + pending + line, ''
    out.append((cur + pending, names))
    return out


def cut_prelude(body, prelude):
    parts = chunks(prelude)
    need = set(re.findall(IDENT, body))
    keep = [names is None for _, names in parts]
    for i, (text, _) in enumerate(parts):
        if keep[i]:
            need |= set(re.findall(IDENT, text))
    changed = True
    while changed:
        changed = False
        for i, (text, names) in enumerate(parts):
            if not keep[i] and any(n in need for n in names):
                keep[i], changed = True, True
                need |= set(re.findall(IDENT, text))
    return ''.join(text for i, (text, _) in enumerate(parts) if keep[i])


def sent_text(name):
    prelude, body = sent_part(LUA / 'prelude.lua'), sent_part(LUA / f'{name}.lua')
    return cut_prelude(body, prelude) + body


def shas():
    """sha -> script name, of the scripts as rlock sends them (and as it sent them with
    the whole prelude)."""
    prelude = sent_part(LUA / 'prelude.lua')
    out = {}
    for name in NAMES:
        body = sent_part(LUA / f'{name}.lua')
        for text in (prelude + body, cut_prelude(body, prelude) + body):
            out[hashlib.sha1(text.encode()).hexdigest()] = name
    return out


if __name__ == '__main__':
    if len(sys.argv) != 2 or sys.argv[1] not in NAMES:
        sys.exit(__doc__.split('\n\n')[-1])
    sys.stdout.write(sent_text(sys.argv[1]))
