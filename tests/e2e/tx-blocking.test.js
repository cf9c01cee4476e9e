'use strict';
// Transactions and blocking commands through the proxy with ioredis 5 and
// node-redis 4 as plain single-server clients: multi().exec(), a WATCH
// transfer that retries after a concurrent change, blpop on one connection
// while another keeps working, and a stream consumer group with
// XREADGROUP BLOCK and XACK.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { createClient, WatchError } = require('redis');
const { REDIS_URL, KeyBook } = require('./lib/env');

function ioredis() {
  const r = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 5000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  return r.connect().then(() => r);
}

async function nodeRedis() {
  const c = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false, connectTimeout: 5000 } });
  c.on('error', () => {});
  await c.connect();
  return c;
}

describe('ioredis 5: transactions and blocking commands', { timeout: 60000 }, () => {
  const book = new KeyBook('ioredis-tx');
  let redis, other;

  before(async () => {
    redis = await ioredis();
    other = await ioredis();
  });

  after(async () => {
    if (redis) {
      await Promise.all(book.all().map((k) => redis.del(k)));
      await redis.quit();
    }
    if (other) await other.quit();
  });

  test('multi().exec() on keys of one slot', async () => {
    const a = book.key('{cart}:items');
    const n = book.key('{cart}:count');
    const res = await redis.multi().rpush(a, 'x', 'y').incr(n).lrange(a, 0, -1).exec();
    assert.deepEqual(res, [[null, 2], [null, 1], [null, ['x', 'y']]]);
  });

  test('multi().exec() across slots is refused and nothing runs', async () => {
    const a = book.keyIn('cross:a', 0);
    const b = book.keyIn('cross:b', 1);
    await assert.rejects(redis.multi().set(a, '1').set(b, '2').exec(), /CROSSSLOT/);
    assert.equal(await other.exists(a), 0);
    assert.equal(await other.exists(b), 0);
  });

  test('WATCH transfer retries after a concurrent change', async () => {
    const from = book.key('{bank}:alice');
    const to = book.key('{bank}:bob');
    await redis.mset(from, 100, to, 0);
    let tries = 0;
    for (;;) {
      tries++;
      await redis.watch(from);
      const balance = Number(await redis.get(from));
      if (tries === 1) await other.incrby(from, 5); // someone else moves money
      const res = await redis.multi().decrby(from, 30).incrby(to, 30).exec();
      if (res !== null) {
        assert.deepEqual(res, [[null, balance - 30], [null, 30]]);
        break;
      }
      assert.ok(tries < 5, 'EXEC kept failing');
    }
    assert.equal(tries, 2);
    assert.equal(await other.get(from), '75');
    assert.equal(await other.get(to), '30');
  });

  test('blpop blocks one connection, not the others', async () => {
    const q = book.key('jobs');
    const blocker = await ioredis();
    try {
      const popped = blocker.blpop(q, 0);
      for (let i = 0; i < 50; i++) assert.equal(await other.ping(), 'PONG');
      await other.rpush(q, 'job-1');
      assert.deepEqual(await popped, [q, 'job-1']);
      assert.equal(await blocker.blpop(q, 0.2), null);
    } finally {
      await blocker.quit();
    }
  });

  test('xreadgroup BLOCK and xack', async () => {
    const s = book.key('{events}:stream');
    await redis.xgroup('CREATE', s, 'g', '$', 'MKSTREAM');
    const reading = redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 5, 'BLOCK', 5000, 'STREAMS', s, '>');
    const id = await other.xadd(s, '*', 'kind', 'signup');
    const res = await reading;
    assert.deepEqual(res, [[s, [[id, ['kind', 'signup']]]]]);
    assert.equal(await redis.xack(s, 'g', id), 1);
    assert.equal((await redis.xpending(s, 'g'))[0], 0);
  });
});

describe('node-redis 4: transactions and blocking commands', { timeout: 60000 }, () => {
  const book = new KeyBook('node-redis-tx');
  let client, other;

  before(async () => {
    client = await nodeRedis();
    other = await nodeRedis();
  });

  after(async () => {
    if (client) {
      await Promise.all(book.all().map((k) => client.del(k)));
      await client.quit();
    }
    if (other) await other.quit();
  });

  test('multi().exec() on keys of one slot', async () => {
    const h = book.key('{user:1}:profile');
    const v = book.key('{user:1}:visits');
    const res = await client.multi().hSet(h, 'name', 'ada').incr(v).hGet(h, 'name').exec();
    assert.deepEqual(res, [1, 1, 'ada']);
  });

  test('WATCH transfer retries after a concurrent change', async () => {
    const from = book.key('{bank}:carol');
    const to = book.key('{bank}:dave');
    await client.mSet([from, '50', to, '0']);
    let tries = 0;
    for (;;) {
      tries++;
      try {
        await client.executeIsolated(async (iso) => {
          await iso.watch(from);
          const balance = Number(await iso.get(from));
          if (tries === 1) await other.incrBy(from, 1);
          await iso.multi().decrBy(from, 20).incrBy(to, 20).exec();
          assert.ok(balance >= 20);
        });
        break;
      } catch (e) {
        if (!(e instanceof WatchError)) throw e;
        assert.ok(tries < 5, 'EXEC kept failing');
      }
    }
    assert.equal(tries, 2);
    assert.equal(await other.get(from), '31');
    assert.equal(await other.get(to), '20');
  });

  test('blPop blocks one connection, not the others', async () => {
    const q = book.key('tasks');
    const blocker = await nodeRedis();
    try {
      const popped = blocker.blPop(q, 0);
      for (let i = 0; i < 50; i++) assert.equal(await other.ping(), 'PONG');
      await other.rPush(q, 'task-1');
      assert.deepEqual({ ...(await popped) }, { key: q, element: 'task-1' });
    } finally {
      await blocker.quit();
    }
  });

  test('xReadGroup BLOCK and xAck', async () => {
    const s = book.key('{orders}:stream');
    await client.xGroupCreate(s, 'g', '$', { MKSTREAM: true });
    const reader = await nodeRedis();
    try {
      const reading = reader.xReadGroup('g', 'c1', { key: s, id: '>' }, { COUNT: 5, BLOCK: 5000 });
      const id = await other.xAdd(s, '*', { item: 'book' });
      const res = await reading;
      assert.equal(res.length, 1);
      assert.equal(res[0].name, s);
      assert.equal(res[0].messages[0].id, id);
      assert.deepEqual({ ...res[0].messages[0].message }, { item: 'book' });
      assert.equal(await client.xAck(s, 'g', id), 1);
      assert.equal((await client.xPending(s, 'g')).pending, 0);
    } finally {
      await reader.quit();
    }
  });
});
