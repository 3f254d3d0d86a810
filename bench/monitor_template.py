#!/usr/bin/env python3
"""Turns `redis-cli MONITOR` output into a template for bench/cycles.c: the script calls
(EVALSHA, EVALSHA_RO, FCALL, FCALL_RO) one a line, arguments separated by tabs, with KEY
replaced by @K and TOKEN by @T wherever they occur.
Usage: monitor_template.py KEY TOKEN < monitor.out > template          (bench/ only)"""
import re
import sys

ESC = {'n': '\n', 'r': '\r', 't': '\t', 'a': '\a', 'b': '\b', '\\': '\\', '"': '"'}


def unquote(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == '\\' and i + 1 < len(s):
            n = s[i + 1]
            if n == 'x':
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(ESC.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return ''.join(out)


def main():
    key, token = sys.argv[1], sys.argv[2]
    for line in sys.stdin:
        m = re.match(r'^[0-9.]+ \[[^]]*\] (.*)$', line.rstrip('\n'))
        if not m:
            continue
        args = [unquote(a) for a in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))]
        if not args or args[0].upper() not in ('EVALSHA', 'EVALSHA_RO', 'FCALL', 'FCALL_RO'):
            continue
        if any('\t' in a or '\n' in a for a in args):
            sys.exit('monitor_template.py: an argument holds a tab or a newline')
        print('\t'.join(a.replace(key, '@K').replace(token, '@T') for a in args))


main()
