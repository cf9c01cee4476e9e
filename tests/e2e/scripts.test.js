'use strict';
// Lua scripts and functions through the proxy with ioredis 5 and node-redis 4
// as plain single-server clients: eval/evalsha, ioredis' defineCommand and
// node-redis' defineScript (EVALSHA first, EVAL on NOSCRIPT), SCRIPT LOAD /
// EXISTS, a SET NX EX lock released by compare-and-delete, the courier
// rate-limit script on each master, a presence sweep over two keys of one
// hash tag, FUNCTION LOAD + FCALL, and CROSSSLOT for keys on two masters.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { createClient, defineScript } = require('redis');
const { REDIS_URL, KeyBook } = require('./lib/env');

// Sliding window on Redis's clock: ARGV limit, window ms, request id.
const RATE_LIMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - n - 1}
end
return {0, 0}`;

const SWEEP = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
for _, id in ipairs(stale) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return stale`;

const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const CROSSSLOT = /CROSSSLOT Keys in request don't hash to the same slot/;

describe('scripts through the proxy: ioredis 5', { timeout: 60000 }, () => {
  const book = new KeyBook('scripts-ioredis');
  let redis;

  before(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    redis.on('error', () => {});
    await redis.connect();
    redis.defineCommand('rateLimit', { numberOfKeys: 1, lua: RATE_LIMIT });
    redis.defineCommand('sweep', { numberOfKeys: 2, lua: SWEEP });
  });

  after(async () => {
    if (!redis) return;
    await Promise.all(book.all().map((k) => redis.del(k)));
    await redis.quit();
  });

  test('defineCommand rate limit on every master, in a pipeline too', async () => {
    for (const r of [0, 1, 2]) {
      const key = book.keyIn(`courier:ratelimit:${r}`, r);
      const got = [];
      for (let i = 0; i < 6; i++) got.push(await redis.rateLimit(key, 4, 60000, `req-${i}`));
      assert.deepEqual(got, [[1, 3], [1, 2], [1, 1], [1, 0], [0, 0], [0, 0]]);
      assert.equal(await redis.zcard(key), 4);
      const pttl = await redis.pttl(key);
      assert.ok(pttl > 0 && pttl <= 60000, `pttl ${pttl}`);
    }
    const keys = [0, 1, 2].map((r) => book.keyIn(`courier:ratelimit:pipe:${r}`, r));
    const p = redis.pipeline();
    for (const k of keys) p.rateLimit(k, 1, 60000, 'a').rateLimit(k, 1, 60000, 'b');
    const res = await p.exec();
    assert.deepEqual(res.map(([err, v]) => { assert.equal(err, null); return v; }),
      [[1, 0], [0, 0], [1, 0], [0, 0], [1, 0], [0, 0]]);
  });

  test('presence sweep over two keys with one hash tag', async () => {
    const score = book.key('presence:score:{room:general}');
    const meta = book.key('presence:meta:{room:general}');
    const [sec] = await redis.time();
    const now = Number(sec) * 1000;
    await redis.zadd(score, now - 60000, 'c1', now + 60000, 'c2');
    await redis.hset(meta, 'c1', '{"userId":"u1"}', 'c2', '{"userId":"u2"}');
    assert.deepEqual(await redis.sweep(score, meta, 30000), ['c1']);
    assert.deepEqual(await redis.zrange(score, 0, -1), ['c2']);
    assert.deepEqual(await redis.hkeys(meta), ['c2']);
  });

  test('SET NX EX lock, released by its holder only', async () => {
    const lock = book.key('lock:job:7');
    assert.equal(await redis.set(lock, 'me', 'EX', 10, 'NX'), 'OK');
    assert.equal(await redis.set(lock, 'other', 'EX', 10, 'NX'), null);
    assert.equal(await redis.eval(UNLOCK, 1, lock, 'other'), 0);
    assert.equal(await redis.get(lock), 'me');
    assert.equal(await redis.eval(UNLOCK, 1, lock, 'me'), 1);
    assert.equal(await redis.exists(lock), 0);
  });

  test('SCRIPT LOAD, EXISTS, EVALSHA', async () => {
    const body = `return '${book.prefix}'`;
    const sha = await redis.script('LOAD', body);
    assert.match(sha, /^[0-9a-f]{40}$/);
    assert.deepEqual(await redis.script('EXISTS', sha, '0'.repeat(40)), [1, 0]);
    assert.equal(await redis.evalsha(sha, 0), book.prefix);
    await assert.rejects(redis.evalsha('f'.repeat(40), 0), /NOSCRIPT/);
  });

  test('CROSSSLOT for keys on two masters, nothing written', async () => {
    const a = book.keyIn('xs:a', 0);
    const b = book.keyIn('xs:b', 1);
    await assert.rejects(
      redis.eval("redis.call('SET', KEYS[1], 1) redis.call('SET', KEYS[2], 1)", 2, a, b), CROSSSLOT);
    assert.equal(await redis.exists(a), 0);
    assert.equal(await redis.exists(b), 0);
  });
});

describe('scripts through the proxy: node-redis 4', { timeout: 60000 }, () => {
  const book = new KeyBook('scripts-node-redis');
  let client;
  const lib = `e2e${process.pid}`;

  before(async () => {
    client = createClient({
      url: REDIS_URL,
      socket: { reconnectStrategy: false, connectTimeout: 5000 },
      scripts: {
        rateLimit: defineScript({
          NUMBER_OF_KEYS: 1,
          SCRIPT: RATE_LIMIT,
          transformArguments: (key, limit, window, id) => [key, String(limit), String(window), id],
        }),
      },
    });
    client.on('error', () => {});
    await client.connect();
  });

  after(async () => {
    if (!client) return;
    await Promise.all(book.all().map((k) => client.del(k)));
    await client.sendCommand(['FUNCTION', 'DELETE', lib]).catch(() => {});
    await client.quit();
  });

  test('defineScript rate limit on every master', async () => {
    for (const r of [0, 1, 2]) {
      const key = book.keyIn(`courier:ratelimit:${r}`, r);
      const got = [];
      for (let i = 0; i < 4; i++) got.push(await client.rateLimit(key, 2, 60000, `req-${i}`));
      assert.deepEqual(got, [[1, 1], [1, 0], [0, 0], [0, 0]]);
    }
  });

  test('eval, scriptLoad, evalSha, scriptExists', async () => {
    const k = book.keyIn('counter', 2);
    assert.equal(await client.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", { keys: [k], arguments: ['5'] }), 5);
    const sha = await client.scriptLoad("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    assert.equal(await client.evalSha(sha, { keys: [k], arguments: ['2'] }), 7);
    assert.deepEqual(await client.scriptExists(sha), [true]);
    assert.equal(await client.eval('return 42'), 42);
  });

  test('SET NX EX lock, released by compare-and-delete', async () => {
    const lock = book.key('lock:report');
    assert.equal(await client.set(lock, 'token-1', { NX: true, EX: 10 }), 'OK');
    assert.equal(await client.set(lock, 'token-2', { NX: true, EX: 10 }), null);
    assert.equal(await client.eval(UNLOCK, { keys: [lock], arguments: ['token-2'] }), 0);
    assert.equal(await client.eval(UNLOCK, { keys: [lock], arguments: ['token-1'] }), 1);
    assert.equal(await client.get(lock), null);
  });

  test('FUNCTION LOAD and FCALL on every master', async () => {
    const code = `#!lua name=${lib}\nredis.register_function('${lib}_add', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)`;
    assert.equal(await client.sendCommand(['FUNCTION', 'LOAD', 'REPLACE', code]), lib);
    for (const r of [0, 1, 2]) {
      const k = book.keyIn(`fn:${r}`, r);
      assert.equal(await client.sendCommand(['FCALL', `${lib}_add`, '1', k, '3']), 3);
      assert.equal(await client.get(k), '3');
    }
    await assert.rejects(
      client.sendCommand(['FCALL', `${lib}_add`, '2', book.keyIn('fn:x', 0), book.keyIn('fn:y', 1), '1']),
      CROSSSLOT);
  });
});
