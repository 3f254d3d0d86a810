#!/usr/bin/env python3
"""Checks the Functions library (cmake/functions_library.py) against the scripts as
rlock sends them, on a fresh redis-server of version 7 or later (bench/, and
tests/functions.bats).

A real rlock session on key `capkey` is watched with MONITOR: acquire (free), extend,
acquire by another (taken), a waiter that gives up (queued, then leave), status, list,
release, a second acquire and release (the state mutated, history kept), history; then
on `capsem` a semaphore of 2 (two holders, one refused, extend, release), a shared
acquire refused (mixed), break, forget, two shared holders, status, their releases. Its
script calls are then replayed, one step at a time, on four keys: A by EVALSHA (what
rlock sends), B and C by FCALL of the library, D by FCALL of the --cache-cluster
library, in the order A, B, C, D: consecutive FCALLs of one library on different keys
show any state left from one call in the next. After each step the replies and the keys
each lock left (TYPE, value, whether it expires) must match, key names substituted and
server times (within 2 s) and stream ids masked. Then, under OOM (maxmemory 1): release,
extend and acquire compared the same way, a semaphore's renewal included (its first
write is the record's PEXPIRE, which a full server allows); and a library without
allow-oom, whose release the server refuses whole. Exit 0 when all match, 1 with the differences.
Usage: fcall_check.py RLOCK_BINARY [LIBRARY]
LIBRARY: the library of keys B and C (the one rlock embeds, as tests/functions.bats
gives it: the dump_scripts helper's functions.library); default bench/fcall_library.py's."""
import hashlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sent_scripts

ROOT = Path(__file__).resolve().parent.parent


class Redis:
    """A minimal RESP2 client: enough for the check."""

    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port))
        self.f = self.s.makefile('rb')

    def call(self, *args):
        out = [b'*%d\r\n' % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b'$%d\r\n%s\r\n' % (len(a), a))
        self.s.sendall(b''.join(out))
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        t, rest = line[:1], line[1:]
        if t == b'+':
            return rest.decode()
        if t == b'-':
            return ('ERR', rest.decode())
        if t == b':':
            return int(rest)
        if t == b'$':
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode('utf-8', 'replace')
        if t == b'*':
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f'bad reply {line!r}')


ESC = {'n': '\n', 'r': '\r', 't': '\t', 'a': '\a', 'b': '\b', '\\': '\\', '"': '"'}


def unquote(s):
    """An argument as MONITOR quotes it, unquoted (as bench/monitor_template.py does)."""
    out, i = [], 0
    while i < len(s):
        if s[i] == '\\' and i + 1 < len(s):
            if s[i + 1] == 'x':
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(ESC.get(s[i + 1], s[i + 1]))
            i += 2
            continue
        out.append(s[i])
        i += 1
    return ''.join(out)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def after_cut(path):
    text = path.read_text()
    return text[text.index('\n', text.index('\n-- >8 --') + 1):]


def script_shas():
    """sha -> script name, as rlock sends them (bench/sent_scripts.py)."""
    return sent_scripts.shas()


def capture(rlock, port, work):
    """The script calls of a real session on `capkey`, as lists of arguments."""
    # The session by EVALSHA, whatever the caller's environment says.
    env = dict(os.environ, RLOCK_URL=f'redis://127.0.0.1:{port}/0', RLOCK_FUNCTIONS='off')
    mon = subprocess.Popen(['redis-cli', '-p', str(port), 'MONITOR'], stdout=open(work / 'mon', 'w'))
    r = Redis(port)
    for _ in range(100):
        if (work / 'mon').stat().st_size > 0:
            break
        time.sleep(0.02)

    def run(*a, ok=True):
        p = subprocess.run([rlock, *a], env=env, capture_output=True, text=True)
        if ok and p.returncode != 0:
            sys.exit(f'fcall_check: rlock {" ".join(a)}: {p.returncode} {p.stderr.strip()}')
        return p.stdout.strip()

    tok = run('acquire', 'capkey')
    run('extend', 'capkey', '--token', tok)
    run('acquire', 'capkey', '--no-wait', ok=False)  # taken
    run('acquire', 'capkey', '--wait', '300ms', ok=False)  # queued, gives up: leave
    run('status', 'capkey')
    run('list')
    run('release', 'capkey', '--token', tok)
    tok2 = run('acquire', 'capkey', '--ttl', '20s')
    run('release', 'capkey', '--token', tok2)
    run('history', 'capkey')
    # A semaphore, then a shared lock, on a second key (capsem): mixed kinds, break, forget.
    s1 = run('acquire', 'capsem', '--limit', '2')
    s2 = run('acquire', 'capsem', '--limit', '2')
    run('acquire', 'capsem', '--limit', '2', '--no-wait', ok=False)  # full
    run('extend', 'capsem', '--token', s1)
    run('release', 'capsem', '--token', s1)
    run('acquire', 'capsem', '--shared', '--no-wait', ok=False)  # mixed
    run('break', 'capsem', '--token', s2, '--yes')
    run('forget', 'capsem', '--yes')
    h1 = run('acquire', 'capsem', '--shared')
    h2 = run('acquire', 'capsem', '--shared')
    run('status', 'capsem')
    run('release', 'capsem', '--token', h1)
    run('release', 'capsem', '--token', h2)
    r.call('PING')
    for _ in range(100):
        if '"PING"' in (work / 'mon').read_text():
            break
        time.sleep(0.02)
    mon.terminate()
    mon.wait()
    calls = []
    for line in (work / 'mon').read_text().splitlines():
        m = re.match(r'^[0-9.]+ \[[^]]*\] (.*)$', line)
        if not m:
            continue
        args = [unquote(a) for a in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))]
        if args and args[0].upper() in ('EVALSHA', 'EVALSHA_RO', 'EVAL', 'EVAL_RO'):
            calls.append(args)
    return calls


# Fields whose values are server times or durations: the four lanes run a few hundred
# microseconds apart, so these may differ by a few ms.
TIMED = {'since', 'held', 'waited', 'until', 'kept', 'done', 'ended'}


def close(a, b, timed):
    """Equal, or both server times (epoch ms), leases (pttl) or TIMED values close."""
    if a == b:
        return True
    sa, sb = str(a), str(b)
    if re.fullmatch(r'-?\d+', sa) and re.fullmatch(r'-?\d+', sb):
        ia, ib = int(sa), int(sb)
        if timed or min(ia, ib) >= 10 ** 12:
            return abs(ia - ib) <= 2000
        return min(ia, ib) >= 1000 and abs(ia - ib) <= 50  # a lease's pttl
    ma, mb = re.fullmatch(r'(\d{13})-(\d+)', sa), re.fullmatch(r'(\d{13})-(\d+)', sb)
    return bool(ma and mb and abs(int(ma.group(1)) - int(mb.group(1))) <= 2000)


def diff(a, b, path='', timed=False):
    if isinstance(a, dict) and isinstance(b, dict):
        a, b = sorted(a.items()), sorted(b.items())
        a, b = [list(x) for x in a], [list(x) for x in b]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f'{path}: {a!r} vs {b!r}']
        out, prev = [], None
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f'{path}[{i}]', prev in TIMED)
            prev = x if isinstance(x, str) else None
        return out
    if isinstance(a, str) and isinstance(b, str) and '\t' in a and '\t' in b:
        return diff(a.split('\t'), b.split('\t'), path)
    return [] if close(a, b, timed) else [f'{path}: {a!r} vs {b!r}']


def subst(v, frm, to):
    if isinstance(v, list):
        return [subst(x, frm, to) for x in v]
    if isinstance(v, tuple):
        return tuple(subst(x, frm, to) for x in v)
    if isinstance(v, str):
        return v.replace(frm, to)
    return v


def dump(r, key):
    """Every key of locks `key` and `key`s (PREFIX{key}...): name -> (type, value,
    expires)."""
    out = {}
    for k in sorted(r.call('KEYS', f'*{{{key}}}*') + r.call('KEYS', f'*{{{key}s}}*')):
        t = r.call('TYPE', k)
        if t == 'string':
            v = r.call('GET', k)
        elif t == 'hash':
            h = r.call('HGETALL', k)
            v = sorted(zip(h[::2], h[1::2]))
            v = [list(p) for p in v]
        elif t == 'zset':
            v = r.call('ZRANGE', k, 0, -1, 'WITHSCORES')
        elif t == 'list':
            v = r.call('LRANGE', k, 0, -1)
        elif t == 'stream':
            v = r.call('XRANGE', k, '-', '+')
        else:
            v = t
        out[k.replace(key, '@K')] = [t, v, r.call('PTTL', k) > 0]
    return out


def main():
    rlock = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / 'build' / 'rlock')
    work = Path(tempfile.mkdtemp())
    port = free_port()
    srv = subprocess.Popen(['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--save', '',
                            '--appendonly', 'no', '--dir', str(work)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                r = Redis(port)
                r.call('PING')
                break
            except OSError:
                time.sleep(0.05)
        ver = r.call('INFO', 'server')
        if int(re.search(r'redis_version:(\d+)', ver).group(1)) < 7:
            print('fcall_check: skipped: Redis < 7 has no Functions')
            return 0
        return check(r, rlock, port, work)
    finally:
        srv.terminate()
        srv.wait()
        subprocess.run(['rm', '-rf', str(work)])


def library(*opts):
    p = subprocess.run([sys.executable, str(ROOT / 'bench' / 'fcall_library.py'), *opts],
                       capture_output=True, text=True, check=True)
    return p.stdout


def check(r, rlock, port, work):
    calls = capture(rlock, port, work)
    shas = script_shas()
    plain_lib = Path(sys.argv[2]).read_text() if len(sys.argv) > 2 else library()
    cached_lib = library('--cache-cluster')
    suffix = {}
    for name, text in (('fcall', plain_lib), ('cached', cached_lib)):
        got = r.call('FUNCTION', 'LOAD', text)
        if isinstance(got, tuple):
            print(f'fcall_check: FUNCTION LOAD ({name}): {got[1]}')
            return 1
        suffix[name] = re.search(r"function_name = 'acquire_(\w+)'", text).group(1)
    r.call('FLUSHALL')
    lanes = [('A', 'eval'), ('B', 'fcall'), ('C', 'fcall'), ('D', 'cached')]
    bad, steps = [], 0

    def send(args, key, how):
        verb, sha = args[0].upper(), args[1]
        a = [subst(subst(x, 'capkey', key), 'capsem', key + 's') for x in args]
        if how == 'eval':
            return r.call(*a)
        name = shas.get(sha)
        if name is None:
            return ('ERR', f'unknown sha {sha}')
        if name == 'nest' and verb.endswith('_RO'):
            name = 'nest_ro'
        fverb = 'FCALL_RO' if verb.endswith('_RO') else 'FCALL'
        return r.call(fverb, f'{name}_{suffix[how]}', *a[2:])

    def compare(what, replies, dumps):
        nonlocal bad
        base = subst(replies['A'], 'keyA', '@K')
        for k, _ in lanes[1:]:
            d = diff(base, subst(replies[k], f'key{k}', '@K'), f'{what} reply')
            d += diff(dumps['A'], dumps[k], f'{what} keys')
            bad += [f'{k}: {x}' for x in d]

    for args in calls:
        if args[0].upper().startswith('EVAL') and not args[0].upper().startswith('EVALSHA'):
            continue  # (the EVAL after NOSCRIPT of a fresh server: its EVALSHA came first)
        steps += 1
        name = shas.get(args[1], args[1][:8])
        replies = {k: send(args, f'key{k}', how) for k, how in lanes}
        dumps = {k: dump(r, f'key{k}') for k, _ in lanes}
        if os.environ.get('FCALL_CHECK_VERBOSE'):
            print(f'step {steps}: {name} {args[9:12]} -> {str(replies["A"])[:70]}')
        compare(f'step {steps} ({name})', replies, dumps)
    # Under OOM: a holder's release and renewal go through (allow-oom), a new acquire is
    # refused, as with EVALSHA.
    acq = next(a for a in calls if shas.get(a[1]) == 'acquire')
    ext = next(a for a in calls if shas.get(a[1]) == 'extend')
    rel = next(a for a in calls if shas.get(a[1]) == 'release' and a[9] == acq[9])
    sem_acq = next(a for a in calls if shas.get(a[1]) == 'acquire' and a[11] == '2')
    sem_ext = next(a for a in calls if shas.get(a[1]) == 'extend' and a[9] == sem_acq[9])
    r.call('FLUSHALL')
    for k, how in lanes:
        send(acq, f'key{k}', how)
        send(sem_acq, f'key{k}', how)
    r.call('CONFIG', 'SET', 'maxmemory', '1')
    oom = {}
    for what, args, key in (('OOM extend', ext, 'key'), ('OOM extend, semaphore', sem_ext, 'key'),
                            ('OOM acquire, taken', [*acq[:9], 'other-token', *acq[10:]], 'key'),
                            ('OOM release', rel, 'key'), ('OOM acquire, free', acq, 'free')):
        steps += 1
        replies = {k: send(args, f'{key}{k}', how) for k, how in lanes}
        oom[what] = replies['A']
        dumps = {k: dump(r, f'{key}{k}') for k, _ in lanes}
        compare(what, {k: subst(v, f'{key}{k}', f'key{k}') for k, v in replies.items()}, dumps)
    # Without allow-oom, the server refuses the whole release (the lock stays held).
    r.call('CONFIG', 'SET', 'maxmemory', '0')
    strict = plain_lib.replace("'allow-oom'", '').replace('#!lua name=rlockbench_', '#!lua name=strict_')
    strict = re.sub(r"function_name = '(\w+?)_(\w{12})'", r"function_name = 'strict_\1'", strict)
    r.call('FUNCTION', 'LOAD', strict)
    r.call('FCALL', f'acquire_{suffix["fcall"]}', *subst(acq, 'capkey', 'keyS')[2:])
    r.call('CONFIG', 'SET', 'maxmemory', '1')
    strict_rel = r.call('FCALL', 'strict_release', *subst(rel, 'capkey', 'keyS')[2:])
    r.call('CONFIG', 'SET', 'maxmemory', '0')
    print(f'fcall_check: {steps} steps compared on keys A (EVALSHA), B, C (FCALL), '
          f'D (FCALL, cluster mode cached); {len(calls)} calls captured')
    for what, got in oom.items():
        print(f'fcall_check: {what} (maxmemory 1), EVALSHA: {str(got)[:60]}')
    print(f'fcall_check: OOM release by FCALL without allow-oom: {strict_rel!r}')
    for b in bad:
        print('fcall_check: DIFFERENT', b)
    return 1 if bad else 0


sys.exit(main())
