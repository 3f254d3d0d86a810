'use strict';
// A re-implementation, written from its description (../shared/seeds/000_*.txt), of the
// NestJS RedisLockService that rlock's `--layout plain` must interoperate with:
//
// - the lock of KEY is the string `lock:KEY` (no hash tag): SET lock:KEY TOKEN PX TTL NX;
// - while it is held a watchdog renews it every TTL/3 with a token-checked PEXPIRE script;
// - every instance PSUBSCRIBEs `lock:release:*` once, at start (onModuleInit);
// - a waiter waits for a message on `lock:release:KEY` (any payload) or waitTimeout
//   (1000 ms), whichever comes first, then tries again; after MAX_WAIT_TIME (10 s) in all
//   it gives up (RedisLockWaitTimeoutException);
// - release is one script: if the value is still its token, DEL the key and PUBLISH on
//   `lock:release:KEY`.
//
// Command line: see cli.js. With --cluster, an ioredis Cluster connection (the seed's own
// deployment): PUBLISH in a Cluster reaches PSUBSCRIBE on every node.

const { randomUUID } = require('node:crypto');
const { EventEmitter } = require('node:events');
const Redis = require('ioredis');
const { main, LockWaitTimeout } = require('./cli');

const LOCK_PREFIX = 'lock:';
const CHANNEL_PREFIX = 'lock:release:';
const MAX_WAIT_TIME = 10000;

// KEYS[1] the lock, ARGV[1] the token, ARGV[2] the TTL in ms.
const extendScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

// KEYS[1] the lock, ARGV[1] the token, ARGV[2] the channel.
const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0`;

class RedisLockService {
  constructor(client, { maxWaitTime = MAX_WAIT_TIME } = {}) {
    this.client = client;
    this.subscriber = client.duplicate();
    this.maxWaitTime = maxWaitTime;
    this.releases = new EventEmitter(); // channel -> a message on it
    this.releases.setMaxListeners(0);
  }

  async onModuleInit() {
    this.subscriber.on('pmessage', (_pattern, channel) => this.releases.emit(channel));
    await this.subscriber.psubscribe(`${CHANNEL_PREFIX}*`);
  }

  async onModuleDestroy() {
    await Promise.allSettled([this.subscriber.quit(), this.client.quit()]);
  }

  // (onWait: for the tests, called once when the first attempt finds the lock held)
  async withLock(key, fn, { ttl = 5000, waitTimeout = 1000, maxWaitTime = this.maxWaitTime, onWait } = {}) {
    const lockKey = LOCK_PREFIX + key;
    const token = randomUUID();
    const started = Date.now();
    for (let attempt = 0; (await this.client.set(lockKey, token, 'PX', ttl, 'NX')) !== 'OK'; attempt++) {
      if (Date.now() - started >= maxWaitTime) {
        throw new LockWaitTimeout(`RedisLockWaitTimeoutException: ${key} still held after ${maxWaitTime} ms`);
      }
      if (attempt === 0 && onWait) onWait();
      await this.waitForUnlock(key, waitTimeout);
    }
    const watchdog = this.startWatchdog(lockKey, token, ttl);
    try {
      return await fn(token);
    } finally {
      clearInterval(watchdog);
      await this.client.eval(releaseScript, 1, lockKey, token, CHANNEL_PREFIX + key);
    }
  }

  // Resolves on a release message for KEY or after timeout ms; the listener goes either way.
  waitForUnlock(key, timeout) {
    const channel = CHANNEL_PREFIX + key;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.releases.off(channel, done);
        resolve();
      };
      const timer = setTimeout(done, timeout);
      this.releases.on(channel, done);
    });
  }

  startWatchdog(lockKey, token, ttl) {
    return setInterval(() => {
      this.client.eval(extendScript, 1, lockKey, token, ttl).catch((e) => {
        process.stderr.write(`seed_service: watchdog: ${e.message}\n`);
      });
    }, ttl / 3);
  }
}

main('seed_service', {
  async connect(o) {
    const options = { maxRetriesPerRequest: 2, connectTimeout: 5000, connectionName: o.connectionName };
    const client = o.cluster
      ? new Redis.Cluster(o.nodes, { redisOptions: options })
      : new Redis({ ...o.nodes[0], ...options });
    const service = new RedisLockService(client, { maxWaitTime: o.maxWait });
    await service.onModuleInit();
    return {
      withLock: (key, fn) =>
        service.withLock(key, fn, { ttl: o.ttl, waitTimeout: o.retryMs, maxWaitTime: o.maxWait, onWait: o.onWait }),
      close: () => service.onModuleDestroy(),
    };
  },
});
