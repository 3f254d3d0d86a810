#!/usr/bin/env python3
"""Writes rlock's scripts (src/lock/lua/) as one Redis 7 Functions library, which rlock
calls by FCALL with RLOCK_FUNCTIONS=on (docs/PROTOCOL.md, "Functions"): the prelude's
helpers and constants are defined once, when FUNCTION LOAD runs the library, and each
script is a registered function that sets the per-call state, then runs its body. Run by
the build (CMakeLists.txt) with --header; bench/fcall_library.py wraps it for the bench.

The prelude (src/lock/lua/prelude.lua after its `>8` line) is split into top-level
statements. A `local NAME... = EXPR` whose value depends on the call (KEYS, ARGV,
redis.*, or another such name), that has no value, or that any script or prelude
function assigns again (HISTORY, sharded, list.lua's LOCK and BASE ...) becomes a
library-level declaration, and its assignment moves, in order, into `setup(KEYS)`,
which every function calls first: nothing a call sets survives into the next one.
Everything else (helpers, constants) stays as written, run once.
Each body (NAME.lua after its `>8` line) becomes `local function NAME(KEYS, ARGV)
setup(KEYS) BODY end`. Lua 5.1 allows 60 upvalues per function: a body's count of
prelude names is checked (FUNCTION LOAD refuses more; the unit test loads the library).

Usage: functions_library.py [--cache-cluster] [--name NAME] [--header OUT.h] [-q] [> library.lua]
  --cache-cluster  `CLUSTER MYID` is asked once per library (a server cannot change
                   cluster mode without a restart, which loads the library again)
                   instead of in every call that publishes or answers TAKEN; only a
                   definite answer is kept (a node id, or "cluster support disabled")
  --name NAME      the library's name (default rlock_PROTOCOL_HASH, HASH the first 12
                   hex digits of the SHA-1 of the text after the name line)
  --header OUT.h   writes instead a C++ header: rlock::lua::kFunctionsLibrary (the
                   text FUNCTION LOAD sends) and kFunctionsSuffix (HASH)
  -q               no upvalue counts on stderr
Each script is registered as NAME_HASH (acquire_0123456789ab ...): function names are
one namespace across a server's libraries, so two versions need distinct ones, and a
library is never loaded with REPLACE.
"""
import hashlib
import re
import sys
from pathlib import Path

LUA = Path(__file__).resolve().parent.parent / 'src' / 'lock' / 'lua'
# Must not occur in the library: its C++ raw string literal ends at the first one.
DELIMITER = ')rlock_fn"'
# name, source file, flags (rlock's read-only scripts: no-writes; scripts.cc).
# allow-oom: a function without it is refused whole while the server is over
# maxmemory, where EVAL refuses a script only at its first denyoom write if nothing was
# written before: rlock's writing scripts almost always write first with a command that
# is not denyoom (a DEL, often of nothing: walk_line's; a PEXPIRE), so that today an
# acquire, extend or release runs whole under OOM (bench/fcall_check.py shows it). Every
# writing script gets allow-oom to keep that: without it a holder could neither release
# nor renew while the server is full.
SCRIPTS = [
    ('acquire', 'acquire', ['allow-oom']),
    ('extend', 'extend', ['allow-oom']),
    ('release', 'release', ['allow-oom']),
    ('leave', 'leave', ['allow-oom']),
    ('undo', 'undo', ['allow-oom']),
    ('status', 'status', ['no-writes']),
    ('break', 'break', ['allow-oom']),
    ('forget', 'forget', ['allow-oom']),
    ('fence', 'fence', ['allow-oom']),
    ('history', 'history', ['no-writes']),
    ('nest', 'nest', ['allow-oom']),
    ('nest_ro', 'nest', ['no-writes']),
    ('list', 'list', ['no-writes']),
]
CLUSTER_PROBE = "type(redis.pcall('CLUSTER', 'MYID')) == 'string'"


def after_cut(path):
    text = path.read_text()
    cut = re.search(r'^-- >8 --.*\n', text, re.M)
    if not cut:
        sys.exit(f'functions_library.py: {path} has no ">8" line')
    return text[cut.end():]


def statements(prelude):
    """Top-level statements: a line at column 0 that is not a comment or blank starts
    one; indented lines and a column-0 `end` belong to it."""
    out, cur = [], None
    for line in prelude.splitlines(keepends=True):
        starts = line[:1] not in ('', ' ', '\t', '\n', '-') and not re.match(r'end\b', line)
        if starts:
            cur = [line]
            out.append(cur)
        elif cur is not None and (line[:1] in (' ', '\t') or re.match(r'end\b', line)):
            cur.append(line)
        else:
            out.append([line])  # a comment or a blank line: kept as it is
            cur = None
    return [''.join(s) for s in out]


def assigned_elsewhere(name, texts):
    pat = re.compile(r'(?<![\w.])' + re.escape(name) + r'\s*(,\s*[\w]+\s*)*=(?!=)')
    for t in texts:
        for line in t.splitlines():
            code = line.split('--', 1)[0]
            if re.match(r'\s*local\b', code):
                continue
            if pat.search(code):
                return True
    return False


def protocol(prelude):
    m = re.search(r'^-- rlock lock protocol (\d+)', prelude, re.M)
    if not m:
        sys.exit('functions_library.py: prelude.lua names no "rlock lock protocol N"')
    return m.group(1)


def build(cache_cluster, name, prefix=None, quiet=False, generator='cmake/functions_library.py'):
    """(text, hash): the library; named `name`, else PREFIX + hash (PREFIX default
    rlock_PROTOCOL_; one given is hashed with the text, so that its function names differ
    from rlock's)."""
    prelude = after_cut(LUA / 'prelude.lua')
    bodies = {f: after_cut(LUA / f'{f}.lua') for _, f, _ in SCRIPTS}
    stmts = statements(prelude)
    decl = re.compile(r'local\s+(?!function\b)([\w\s,]+?)\s*(=\s*(.*))?$', re.S)
    per_call, lib_names, out, setup = set(), [], [], []
    for s in stmts:
        m = decl.match(s)
        if not m or s.startswith('local function'):
            fn = re.match(r'local function (\w+)', s)
            if fn:
                lib_names.append(fn.group(1))
            out.append(s)
            continue
        names = [n.strip() for n in m.group(1).split(',')]
        rhs = m.group(3)
        lib_names += names
        words = set(re.findall(r'[A-Za-z_]\w*', rhs or ''))
        others = [x for x in stmts if x is not s] + list(bodies.values())
        if (rhs is None or words & {'KEYS', 'ARGV', 'redis'} or words & per_call or
                any(assigned_elsewhere(n, others) for n in names)):
            per_call.update(names)
            out.append(f'local {", ".join(names)}\n')
            setup.append(f'  {", ".join(names)} = {rhs.strip() if rhs else "nil"}\n')
        else:
            out.append(s)
    lib = ''.join(out)
    if cache_cluster:
        lib = lib.replace(CLUSTER_PROBE, 'cluster_node()')
        bodies = {k: v.replace(CLUSTER_PROBE, 'cluster_node()') for k, v in bodies.items()}
        lib = ('-- Whether this server is a Cluster node, asked once: only a node id or\n'
               '-- "cluster support disabled" is kept (an ACL refusal is asked again).\n'
               'local CLUSTER_NODE\n'
               'local function cluster_node()\n'
               '  if CLUSTER_NODE ~= nil then return CLUSTER_NODE end\n'
               "  local r = redis.pcall('CLUSTER', 'MYID')\n"
               "  if type(r) == 'string' then CLUSTER_NODE = true return true end\n"
               "  if type(r) == 'table' and r.err and string.find(r.err, 'cluster support disabled', 1, true) then\n"
               '    CLUSTER_NODE = false\n'
               '  end\n'
               '  return false\n'
               'end\n') + lib
    parts = [lib, '\n-- The state of one call, set again by every function before its body.\n',
             'local function setup(KEYS)\n', *setup, 'end\n']
    for fname, file, flags in SCRIPTS:
        body = bodies[file]
        used = sorted(set(re.findall(r'[A-Za-z_]\w*', body)) & (set(lib_names) | {'setup'}))
        if not quiet:
            print(f'functions_library.py: {fname}: {len(used) + 1} upvalues at most (limit 60)',
                  file=sys.stderr)
        if len(used) + 1 > 60:
            sys.exit(f'functions_library.py: {fname} needs more than 60 upvalues')
        parts.append(f'\nlocal function script_{fname}(KEYS, ARGV)\nsetup(KEYS)\n{body}end\n')
    for fname, _, flags in SCRIPTS:
        fl = ', '.join(f"'{f}'" for f in flags)
        parts.append(f"redis.register_function{{function_name = '{fname}_@H@', "
                     f"callback = script_{fname}, flags = {{{fl}}}}}\n")
    text = ''.join(parts)
    # Function names are one namespace across every library of a server: each carries
    # the text's hash too, so that two versions' libraries load side by side. A PREFIX
    # given (the bench's) is hashed too: its functions never clash with rlock's own.
    h = hashlib.sha1(((prefix or '') + text).encode()).hexdigest()[:12]
    text = text.replace('@H@', h)
    if not name:
        name = (prefix if prefix is not None else f'rlock_{protocol(prelude)}_') + h
    return (f'#!lua name={name}\n-- Generated by {generator} from src/lock/lua/.\n' + text, h)


def header(text, h):
    if DELIMITER in text:
        sys.exit(f'functions_library.py: the library contains {DELIMITER}: change DELIMITER')
    if '\r' in text:
        sys.exit('functions_library.py: the library contains a carriage return')
    d = DELIMITER[1:-1]
    return ('// Generated by cmake/functions_library.py from src/lock/lua/*.lua at build time: do\n'
            '// not edit. The Redis 7 Functions library rlock loads with RLOCK_FUNCTIONS=on.\n'
            '#pragma once\n\n#include <string_view>\n\nnamespace rlock::lua {\n\n'
            '// What FUNCTION LOAD sends, byte for byte (its line numbers are those of\n'
            '// "@user_function:LINE" in an error).\n'
            f'inline constexpr std::string_view kFunctionsLibrary = R"{d}({text}){d}";\n'
            '// The suffix of every function name (acquire_HASH ...).\n'
            f'inline constexpr std::string_view kFunctionsSuffix = "{h}";\n\n'
            '}  // namespace rlock::lua\n')


def main():
    args = sys.argv[1:]
    cache, name, out, quiet = False, '', None, False
    while args:
        a = args.pop(0)
        if a == '--cache-cluster':
            cache = True
        elif a == '--name' and args:
            name = args.pop(0)
        elif a == '--header' and args:
            out = args.pop(0)
        elif a == '-q':
            quiet = True
        else:
            sys.exit(__doc__.split('\n\n')[-1])
    text, h = build(cache, name, quiet=quiet)
    if out is None:
        sys.stdout.write(text)
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header(text, h))


if __name__ == '__main__':
    main()
