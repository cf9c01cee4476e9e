'use strict';
// ioredis 5 as an unmodified single-server client (not Redis.Cluster)
// pointed at the proxy (REDIS_URL): every data type the bots use, pipelines,
// and multi-key commands whose keys live on all three masters. Every reply
// is checked. ioredis sends INFO on connect (ready check) and CLIENT SETINFO,
// so those are exercised too.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { REDIS_URL, KeyBook } = require('./lib/env');

const book = new KeyBook('ioredis');
let redis;

function connect(extra = {}) {
  const r = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 5000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null, // fail fast: no silent reconnects in a test
    ...extra,
  });
  r.on('error', () => {}); // failures surface as rejected commands
  return r.connect().then(() => r);
}

describe('ioredis 5 through the proxy', { timeout: 60000 }, () => {
  before(async () => {
    redis = await connect();
  });

  after(async () => {
    if (!redis) return;
    // One key per DEL, so cleanup does not depend on cross-slot DEL working.
    await Promise.all(book.all().map((k) => redis.del(k)));
    await redis.quit();
  });

  test('PING and ECHO', async () => {
    assert.equal(await redis.ping(), 'PONG');
    assert.equal(await redis.echo('hello'), 'hello');
  });

  test('strings', async () => {
    const s = book.key('str');
    assert.equal(await redis.set(s, 'v1'), 'OK');
    assert.equal(await redis.get(s), 'v1');
    assert.equal(await redis.append(s, '-more'), 7);
    assert.equal(await redis.get(s), 'v1-more');
    assert.equal(await redis.set(s, 'v2', 'NX'), null);
    assert.equal(await redis.get(book.key('str:missing')), null);

    const n = book.key('counter');
    assert.equal(await redis.incr(n), 1);
    assert.equal(await redis.incrby(n, 41), 42);
    assert.equal(await redis.decr(n), 41);
    await redis.set(s, 'not a number');
    await assert.rejects(redis.incr(s), /ERR value is not an integer or out of range/);

    const ex = book.key('setex');
    assert.equal(await redis.setex(ex, 100, 'short-lived'), 'OK');
    assert.equal(await redis.get(ex), 'short-lived');
    const ttl = await redis.ttl(ex);
    assert.ok(ttl > 90 && ttl <= 100, `ttl ${ttl}`);
    const px = book.key('set:px');
    assert.equal(await redis.set(px, 'v', 'PX', 100000), 'OK');
    const pttl = await redis.pttl(px);
    assert.ok(pttl > 90000 && pttl <= 100000, `pttl ${pttl}`);

    const gd = book.key('getdel');
    await redis.set(gd, 'once');
    assert.equal(await redis.getdel(gd), 'once');
    assert.equal(await redis.getdel(gd), null);
    assert.equal(await redis.exists(gd), 0);

    const empty = book.key('empty');
    assert.equal(await redis.set(empty, ''), 'OK');
    assert.equal(await redis.get(empty), '');
    assert.equal(await redis.strlen(empty), 0);

    const uni = book.key('unicode:é✓');
    assert.equal(await redis.set(uni, 'añ ✓ 日本 🚀'), 'OK');
    assert.equal(await redis.get(uni), 'añ ✓ 日本 🚀');
  });

  test('binary-safe values and a 2 MiB value', async () => {
    const bin = book.key('bin');
    const bytes = Buffer.from([0, 13, 10, 36, 42, 255, 0, 13, 10, 43, 45, 58]);
    await redis.set(bin, bytes);
    assert.deepEqual(await redis.getBuffer(bin), bytes);

    const big = book.key('big');
    const value = 'y'.repeat(2 * 1024 * 1024 - 3) + '\r\n!';
    await redis.set(big, value);
    assert.equal(await redis.strlen(big), value.length);
    assert.equal(await redis.get(big), value);
  });

  test('MSET / MGET across the three masters', async () => {
    const keys = book.spread('mset', 2);
    assert.equal(await redis.mset(...keys.flatMap((k, i) => [k, `value-${i}`])), 'OK');
    const missing = book.keyIn('mget:missing', 1);
    const order = [keys[5], missing, keys[0], keys[3], keys[1], keys[4], keys[2], keys[0]];
    assert.deepEqual(await redis.mget(order),
      ['value-5', null, 'value-0', 'value-3', 'value-1', 'value-4', 'value-2', 'value-0']);
    // The object form of MSET.
    assert.equal(await redis.mset(Object.fromEntries(keys.map((k) => [k, `obj-${k.length}`]))), 'OK');
    assert.deepEqual(await redis.mget(...keys), keys.map((k) => `obj-${k.length}`));
  });

  test('hashes', async () => {
    const h = book.key('hash');
    assert.equal(await redis.hset(h, { name: 'bot-1', lang: 'en', hits: '10' }), 3);
    assert.equal(await redis.hset(h, 'lang', 'fr'), 0);
    assert.equal(await redis.hget(h, 'lang'), 'fr');
    assert.equal(await redis.hget(h, 'nope'), null);
    assert.deepEqual({ ...(await redis.hgetall(h)) }, { name: 'bot-1', lang: 'fr', hits: '10' });
    assert.equal(await redis.hincrby(h, 'hits', 5), 15);
    assert.equal(await redis.hincrbyfloat(h, 'hits', 0.5), '15.5');
    assert.deepEqual(await redis.hmget(h, 'hits', 'nope', 'name'), ['15.5', null, 'bot-1']);
    assert.equal(await redis.hexists(h, 'name'), 1);
    assert.equal(await redis.hexists(h, 'nope'), 0);
    assert.equal(await redis.hlen(h), 3);
    assert.equal(await redis.hdel(h, 'name', 'nope'), 1);
    assert.deepEqual((await redis.hkeys(h)).sort(), ['hits', 'lang']);
    assert.deepEqual({ ...(await redis.hgetall(book.key('hash:missing'))) }, {});
  });

  test('sorted sets', async () => {
    const z = book.key('zset');
    assert.equal(await redis.zadd(z, 3, 'c', 1, 'a', 2, 'b', 2.5, 'bb'), 4);
    assert.equal(await redis.zadd(z, 10, 'a'), 0);
    assert.deepEqual(await redis.zrange(z, 0, -1), ['b', 'bb', 'c', 'a']);
    assert.deepEqual(await redis.zrange(z, 0, -1, 'WITHSCORES'), ['b', '2', 'bb', '2.5', 'c', '3', 'a', '10']);
    assert.equal(await redis.zincrby(z, 0.5, 'c'), '3.5');
    assert.equal(await redis.zincrby(z, -4, 'new'), '-4');
    assert.equal(await redis.zscore(z, 'c'), '3.5');
    assert.equal(await redis.zscore(z, 'none'), null);
    assert.deepEqual(await redis.zrangebyscore(z, 2, 3.5), ['b', 'bb', 'c']);
    assert.deepEqual(await redis.zrangebyscore(z, '(2', '+inf'), ['bb', 'c', 'a']);
    assert.deepEqual(await redis.zrangebyscore(z, '-inf', '+inf', 'LIMIT', 1, 2), ['b', 'bb']);
    assert.deepEqual(await redis.zrangebyscore(z, '(3', 100, 'WITHSCORES'), ['c', '3.5', 'a', '10']);
    assert.deepEqual(await redis.zrevrange(z, 0, 1), ['a', 'c']);
    assert.equal(await redis.zrank(z, 'bb'), 2);
    assert.equal(await redis.zcard(z), 5);
    assert.equal(await redis.zrem(z, 'new', 'none'), 1);
    assert.equal(await redis.zcard(z), 4);
  });

  test('lists', async () => {
    const l = book.key('list');
    assert.equal(await redis.rpush(l, 'b', 'c', 'd'), 3);
    assert.equal(await redis.lpush(l, 'a'), 4);
    assert.deepEqual(await redis.lrange(l, 0, -1), ['a', 'b', 'c', 'd']);
    assert.equal(await redis.llen(l), 4);
    assert.equal(await redis.lindex(l, -1), 'd');
    assert.equal(await redis.lpop(l), 'a');
    assert.equal(await redis.rpop(l), 'd');
    assert.deepEqual(await redis.lpop(l, 5), ['b', 'c']);
    assert.equal(await redis.exists(l), 0);
    assert.equal(await redis.lpop(book.key('list:missing')), null);

    const long = book.key('list:long');
    const items = Array.from({ length: 20000 }, (_, i) => `item-${i}`);
    assert.equal(await redis.rpush(long, ...items), items.length);
    assert.deepEqual(await redis.lrange(long, 0, -1), items);
    assert.equal(await redis.ltrim(long, 0, 9), 'OK');
    assert.deepEqual(await redis.lrange(long, 0, -1), items.slice(0, 10));
  });

  test('sets', async () => {
    const a = book.key('{sets}a');
    const b = book.key('{sets}b');
    assert.equal(await redis.sadd(a, 'x', 'y', 'z', 'x'), 3);
    assert.equal(await redis.sadd(b, 'y', 'z', 'w'), 3);
    assert.deepEqual((await redis.smembers(a)).sort(), ['x', 'y', 'z']);
    assert.equal(await redis.sismember(a, 'x'), 1);
    assert.equal(await redis.sismember(a, 'w'), 0);
    assert.deepEqual(await redis.smismember(a, 'w', 'y'), [0, 1]);
    assert.equal(await redis.scard(a), 3);
    // Same hash tag, so same slot: multi-key set commands are allowed.
    assert.deepEqual((await redis.sinter(a, b)).sort(), ['y', 'z']);
    assert.deepEqual((await redis.sunion(a, b)).sort(), ['w', 'x', 'y', 'z']);
    assert.equal(await redis.srem(a, 'x', 'nope'), 1);
    assert.deepEqual((await redis.smembers(a)).sort(), ['y', 'z']);
  });

  test('streams: XADD MAXLEN ~, XRANGE with an exclusive start, XLEN', async () => {
    const s = book.key('stream');
    const ids = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await redis.xadd(s, 'MAXLEN', '~', 1000, '*', 'n', String(i), 'who', 'bot'));
    }
    for (const id of ids) assert.match(id, /^\d+-\d+$/);
    assert.equal(await redis.xlen(s), 5);

    assert.deepEqual(await redis.xrange(s, '-', '+'),
      ids.map((id, i) => [id, ['n', String(i), 'who', 'bot']]));
    assert.deepEqual((await redis.xrange(s, `(${ids[1]}`, '+')).map(([id]) => id), ids.slice(2));
    assert.deepEqual((await redis.xrange(s, `(${ids[0]}`, '+', 'COUNT', 2)).map(([id]) => id), ids.slice(1, 3));
    assert.deepEqual(await redis.xrange(s, `(${ids[4]}`, '+'), []);
    assert.deepEqual((await redis.xrevrange(s, '+', `(${ids[2]}`)).map(([id]) => id), [ids[4], ids[3]]);

    // Explicit ids and an exact MAXLEN trim.
    const t = book.key('stream:trim');
    for (let i = 1; i <= 6; i++) {
      assert.equal(await redis.xadd(t, 'MAXLEN', 3, `7-${i}`, 'i', String(i)), `7-${i}`);
    }
    assert.equal(await redis.xlen(t), 3);
    assert.deepEqual(await redis.xrange(t, '-', '+'), [['7-4', ['i', '4']], ['7-5', ['i', '5']], ['7-6', ['i', '6']]]);
    assert.deepEqual(await redis.xrange(t, '(7-4', '+'), [['7-5', ['i', '5']], ['7-6', ['i', '6']]]);
    await assert.rejects(redis.xadd(t, '7-1', 'i', 'old'), /equal or smaller than the target stream top item/);
  });

  test('pipeline(): 3000 commands over all masters, in order, error kept in place', async () => {
    const keys = book.spread('pipe', 100);
    const p = redis.pipeline();
    keys.forEach((k, i) => p.set(k, `p${i}`));
    keys.forEach((k) => p.get(k));
    keys.forEach((k) => p.append(k, '!'));
    const replies = await p.exec();
    assert.equal(replies.length, keys.length * 3);
    assert.deepEqual(replies, [
      ...keys.map(() => [null, 'OK']),
      ...keys.map((_, i) => [null, `p${i}`]),
      ...keys.map((_, i) => [null, `p${i}!`.length]),
    ]);

    const [k0, k1, k2] = keys;
    const h = book.keyIn('pipe:hash', 2);
    const mixed = await redis.pipeline()
      .set(k0, '1').incr(k0).incr(k1).hset(h, 'f', 'v').get(k0).mget(k0, k1, k2)
      .exec();
    assert.equal(mixed.length, 6);
    assert.deepEqual(mixed[0], [null, 'OK']);
    assert.deepEqual(mixed[1], [null, 2]);
    assert.match(mixed[2][0].message, /^ERR value is not an integer or out of range$/);
    assert.deepEqual(mixed[3], [null, 1]);
    assert.deepEqual(mixed[4], [null, '2']);
    assert.deepEqual(mixed[5], [null, ['2', 'p1!', 'p2!']]);
  });

  test('auto-pipelining: Promise.all through enableAutoPipelining', async () => {
    const auto = await connect({ enableAutoPipelining: true });
    try {
      const keys = book.spread('auto', 50);
      const sets = await Promise.all(keys.map((k, i) => auto.set(k, String(i))));
      assert.deepEqual(sets, keys.map(() => 'OK'));
      const got = await Promise.all(keys.flatMap((k) => [auto.incr(k), auto.get(k)]));
      assert.deepEqual(got, keys.flatMap((_, i) => [i + 1, String(i + 1)]));
    } finally {
      await auto.quit();
    }
  });

  test('multi-key DEL / EXISTS / UNLINK / TOUCH across the three masters', async () => {
    const keys = book.spread('multi', 3);
    const missing = book.keyIn('multi:missing', 2);
    await redis.mset(...keys.flatMap((k) => [k, k]));
    assert.deepEqual(await redis.mget(keys), keys);
    assert.equal(await redis.exists(keys), 9);
    assert.equal(await redis.exists(keys[0], missing, keys[0], keys[8], keys[4]), 4);
    assert.equal(await redis.touch(keys[1], missing, keys[2]), 2);
    assert.equal(await redis.del(keys[0], keys[1], missing, keys[2], keys[0]), 3);
    assert.equal(await redis.exists(keys), 6);
    assert.deepEqual(await redis.mget(keys.slice(0, 4)), [null, null, null, keys[3]]);
    assert.equal(await redis.unlink(keys[3], keys[4], keys[5], missing), 3);
    assert.equal(await redis.del(keys), 3);
    assert.equal(await redis.exists(keys), 0);
    assert.deepEqual(await redis.mget(keys), keys.map(() => null));
    assert.equal(await redis.del(keys), 0);
  });
});
