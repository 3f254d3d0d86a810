'use strict';
// The command line that seed_service.js and redisson.js share, for tests/layout_interop.bats:
//
//   node DRIVER.js [--host H] --port P [--port P2...] [--cluster] COMMAND KEY OPTIONS
//
//   hold KEY --ttl MS (--hold MS | --until-signal) [--max-wait MS] [--reentrant N]
//       Takes the lock (printing "waiting <epoch-ms>" first if it has to wait for it),
//       prints "acquired <epoch-ms> <holder id>" (the value or hash field it keeps in
//       Redis), holds it for MS (the watchdog renews it meanwhile) or until
//       SIGTERM, SIGINT or SIGUSR1, releases it and prints "released <epoch-ms>".
//       --reentrant N (redisson.js only) takes it N times, and releases it N times.
//   worker KEY --ttl MS --iterations N --log FILE [--work-ms M] [--who NAME] [--max-wait MS]
//       N times: takes the lock ("waiting <epoch-ms>" on stdout when it waits), appends "start NAME <epoch-ms>" to FILE, sleeps M ms,
//       appends "end NAME <epoch-ms>", releases it. FILE is opened for appending on each
//       write (O_APPEND), so several processes may share it.
//
// --max-wait is how long to wait for the lock (default 10000, the seed's MAX_WAIT_TIME; 0:
// try once). --retry-ms (seed_service.js only) is how long a waiter waits for a release
// message before it tries again anyway (default 1000, the seed's waitTimeout): a test that
// proves the message woke it sets it past its own window. With --cluster the ports are seed nodes of a Redis Cluster.
// Exit status: 0 done, 75 the lock was not obtained within --max-wait, 1 any error.
// SIGTERM, SIGINT or SIGUSR1 while waiting ends the process at once with 128+N; while
// holding, the lock is released first and the process exits 0 (a worker after its
// current critical section).

const fs = require('node:fs');
const os = require('node:os');

const EX_TEMPFAIL = 75;

// Thrown by a driver's withLock when --max-wait passes first.
class LockWaitTimeout extends Error {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function parse(prog, argv) {
  const o = {
    host: '127.0.0.1', ports: [], cluster: false, command: null, key: null,
    ttl: 5000, hold: null, untilSignal: false, maxWait: 10000, retryMs: 1000, reentrant: 1,
    iterations: 1, log: null, workMs: 0, who: `${prog}-${process.pid}`,
  };
  const number = (name, v) => {
    if (!/^[0-9]+$/.test(v ?? '')) throw new Error(`${name} wants a whole number, not '${v}'`);
    return Number(v);
  };
  const args = [...argv];
  while (args.length) {
    const a = args.shift();
    switch (a) {
      case '--host': o.host = args.shift(); break;
      case '--port': o.ports.push(number(a, args.shift())); break;
      case '--cluster': o.cluster = true; break;
      case '--ttl': o.ttl = number(a, args.shift()); break;
      case '--hold': o.hold = number(a, args.shift()); break;
      case '--until-signal': o.untilSignal = true; break;
      case '--max-wait': o.maxWait = number(a, args.shift()); break;
      case '--retry-ms': o.retryMs = number(a, args.shift()); break;
      case '--reentrant': o.reentrant = number(a, args.shift()); break;
      case '--iterations': o.iterations = number(a, args.shift()); break;
      case '--log': o.log = args.shift(); break;
      case '--work-ms': o.workMs = number(a, args.shift()); break;
      case '--who': o.who = args.shift(); break;
      default:
        if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
        if (o.command === null) o.command = a;
        else if (o.key === null) o.key = a;
        else throw new Error(`unexpected argument '${a}'`);
    }
  }
  if (!['hold', 'worker'].includes(o.command) || !o.key) {
    throw new Error('usage: COMMAND (hold or worker) and KEY are needed');
  }
  if (o.ports.length === 0) throw new Error('--port is needed');
  if (o.ports.length > 1 && !o.cluster) throw new Error('several --port only with --cluster');
  if (o.ttl < 3) throw new Error('--ttl is at least 3 (ms)');
  if (o.command === 'hold' && (o.hold === null) === !o.untilSignal) {
    throw new Error('hold wants one of --hold MS and --until-signal');
  }
  if (o.command === 'worker' && !o.log) throw new Error('worker wants --log FILE');
  if (o.reentrant < 1) throw new Error('--reentrant is at least 1');
  o.nodes = o.ports.map((port) => ({ host: o.host, port }));
  // every connection is named (CLIENT SETNAME), so that a test can tell the client's
  // subscriptions from rlock's in CLIENT LIST
  o.connectionName = `interop-${prog}-${process.pid}`;
  return o;
}

// main(prog, driver): driver.connect(options) resolves to an object with
//   withLock(key, fn, options): takes the lock (LockWaitTimeout when --max-wait passes;
//     options.onWait() when it is held by another and it starts waiting), awaits
//     fn(holderId), releases the lock, and resolves to fn's result;
//   close(): ends its connections.
async function main(prog, driver) {
  let holding = false;
  let stopRequested = false;
  let wake;
  const stopped = new Promise((resolve) => { wake = resolve; });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGUSR1']) {
    process.on(sig, () => {
      if (!holding) process.exit(128 + os.constants.signals[sig]);
      stopRequested = true;
      wake(sig);
    });
  }
  const line = (text) => process.stdout.write(`${text}\n`);
  let o;
  let locks;
  try {
    o = parse(prog, process.argv.slice(2));
    o.onWait = () => line(`waiting ${Date.now()}`);
    locks = await driver.connect(o);
    if (o.command === 'hold') {
      await locks.withLock(o.key, async (id) => {
        holding = true;
        line(`acquired ${Date.now()} ${id}`);
        await (o.untilSignal ? stopped : Promise.race([sleep(o.hold), stopped]));
      }, o);
      line(`released ${Date.now()}`);
    } else {
      const log = (word) => fs.appendFileSync(o.log, `${word} ${o.who} ${Date.now()}\n`);
      for (let i = 0; i < o.iterations && !stopRequested; i++) {
        await locks.withLock(o.key, async () => {
          holding = true;
          log('start');
          await sleep(o.workMs);
          log('end');
        }, o);
        holding = false;
      }
    }
    await locks.close();
    process.exit(0);
  } catch (e) {
    if (e instanceof LockWaitTimeout) {
      process.stderr.write(`${prog}: ${e.message}\n`);
      process.exit(EX_TEMPFAIL);
    }
    process.stderr.write(`${prog}: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  }
}

module.exports = { main, sleep, LockWaitTimeout };
