#!/usr/bin/env python3
"""rlock's scripts as one Redis 7 Functions library, for the bench (docs/PERFORMANCE.md,
"Redis 7 Functions, measured on the real scripts"): cmake/functions_library.py, the
generator the build runs, with the bench's library name (rlockbench_HASH, the hash
taken with that prefix: function names differ from rlock's too), so that the bench's
FUNCTION LOAD REPLACE neither replaces nor clashes with the library rlock loads.

Usage: fcall_library.py [--cache-cluster] [--name NAME] [--fcall-template T] > library.lua
  --cache-cluster, --name  as cmake/functions_library.py
  --fcall-template T  prints instead bench/cycles.c template T (EVALSHA lines, as
                   bench/monitor_template.py writes them) as FCALLs of this library
"""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'cmake'))
import functions_library  # noqa: E402
import sent_scripts  # noqa: E402


def fcall_template(text, template):
    """A bench/cycles.c template's EVALSHA lines as FCALLs of library `text`."""
    fnames = {base: full for full, base in re.findall(r"function_name = '((\w+?)_[0-9a-f]{12})'", text)}
    file_shas = {}
    for sha, file in sent_scripts.shas().items():
        file_shas.setdefault(file, []).append(sha)
    by_sha = {}
    for fname, file, flags in functions_library.SCRIPTS:
        for sha in file_shas[file]:
            by_sha.setdefault((sha, 'no-writes' in flags), fnames[fname])
    out = []
    for line in Path(template).read_text().splitlines():
        a = line.split('\t')
        ro = a[0].upper() == 'EVALSHA_RO'
        if a[0].upper() in ('EVALSHA', 'EVALSHA_RO'):
            f = by_sha.get((a[1].lower(), ro)) or by_sha.get((a[1].lower(), not ro))
            if not f:
                sys.exit(f'fcall_library.py: {template}: no script has the SHA {a[1]}')
            a[:2] = ['FCALL_RO' if ro else 'FCALL', f]
        out.append('\t'.join(a) + '\n')
    return ''.join(out)


def main():
    args = sys.argv[1:]
    cache, name, template = False, '', None
    while args:
        a = args.pop(0)
        if a == '--cache-cluster':
            cache = True
        elif a == '--name' and args:
            name = args.pop(0)
        elif a == '--fcall-template' and args:
            template = args.pop(0)
        else:
            sys.exit(__doc__.split('\n\n')[-1])
    text, _ = functions_library.build(cache, name, prefix='rlockbench_',
                                      generator='bench/fcall_library.py')
    sys.stdout.write(fcall_template(text, template) if template else text)


main()
