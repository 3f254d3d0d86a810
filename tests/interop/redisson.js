'use strict';
// A client nobody here wrote, for rlock's `--layout redisson`: node-redisson (pinned in
// package.json), a Node port of Redisson 3.x's RLock. What it keeps in Redis, as its
// dist/ code does it:
// - the lock KEY is a hash (no prefix): field `<instance uuid>:<lock object uuid>` (Java
//   Redisson: `<uuid>:<thread id>`), value the hold count, PEXPIREd to the watchdog
//   timeout (--ttl here) and renewed every third of it while held;
// - unlock decrements the count and, at 0, DELs the hash and PUBLISHes "0" on
//   `redisson_lock__channel:{KEY}`; a waiter SUBSCRIBEs there and tries again on any
//   message, or when the holder's TTL has run out.
//
// Command line: see cli.js. `hold --reentrant N` takes the lock N times with the same lock
// object (hold count N) and unlocks it N times.

const { Redisson, TimeUnit } = require('node-redisson');
const { main, LockWaitTimeout } = require('./cli');

// Redisson's tryLock(waitTime): tries, then waits for the unlock message or the holder's
// TTL, and tries again, until waitTime has passed. node-redisson 1.0.4's gives up at the
// first wait that ends without a message (a holder whose watchdog renewed its TTL), so the
// loop over the time left is here. leaseTime -1: no lease, the watchdog keeps the lock
// (Redisson's lock()).
// onWait() is called when the first attempt finds the lock held.
async function tryLock(lock, key, deadline, onWait) {
  if (await lock.tryLock(0, -1, TimeUnit.MILLISECONDS)) return;
  onWait();
  while (!(await lock.tryLock(Math.max(0, deadline - Date.now()), -1, TimeUnit.MILLISECONDS))) {
    if (Date.now() >= deadline) throw new LockWaitTimeout(`${key} still held at the end of --max-wait`);
  }
}

main('redisson', {
  async connect(o) {
    const options = { maxRetriesPerRequest: 2, connectTimeout: 5000, connectionName: o.connectionName };
    const redisson = new Redisson({
      redis: o.cluster ? { clusters: o.nodes, options: { redisOptions: options } }
        : { options: { ...o.nodes[0], ...options } },
      lockWatchdogTimeout: BigInt(o.ttl),
    });
    return {
      async withLock(key, fn) {
        const lock = redisson.getLock(key);
        let held = 0;
        try {
          for (; held < o.reentrant; held++) await tryLock(lock, key, Date.now() + o.maxWait, o.onWait);
          return await fn(lock.getClientName(lock.clientId));
        } finally {
          for (; held > 0; held--) await lock.unlock();
        }
      },
      close: () => redisson.quit(),
    };
  },
});
