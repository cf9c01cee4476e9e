'use strict';
// node-redis 4 as an unmodified single-server client pointed at the proxy
// (REDIS_URL): every data type the bots use, pipelines, and multi-key
// commands whose keys live on all three masters. Every reply is checked.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient, commandOptions } = require('redis');
const { REDIS_URL, KeyBook } = require('./lib/env');

const book = new KeyBook('node-redis');
let client;

// node-redis builds hash and stream-entry objects without a prototype;
// compare them as plain objects.
const plain = (obj) => ({ ...obj });

describe('node-redis 4 through the proxy', { timeout: 60000 }, () => {
  before(async () => {
    const c = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false, connectTimeout: 5000 } });
    c.on('error', () => {}); // failures surface as rejected commands
    await c.connect();
    client = c;
  });

  after(async () => {
    if (!client) return;
    // One key per DEL, so cleanup does not depend on cross-slot DEL working.
    await Promise.all(book.all().map((k) => client.del(k)));
    await client.quit();
  });

  test('PING and ECHO', async () => {
    assert.equal(await client.ping(), 'PONG');
    assert.equal(await client.echo('hello'), 'hello');
  });

  test('strings', async () => {
    const s = book.key('str');
    assert.equal(await client.set(s, 'v1'), 'OK');
    assert.equal(await client.get(s), 'v1');
    assert.equal(await client.append(s, '-more'), 7);
    assert.equal(await client.get(s), 'v1-more');
    assert.equal(await client.set(s, 'v2', { NX: true }), null);
    assert.equal(await client.get(book.key('str:missing')), null);

    const n = book.key('counter');
    assert.equal(await client.incr(n), 1);
    assert.equal(await client.incrBy(n, 41), 42);
    assert.equal(await client.decr(n), 41);
    await client.set(s, 'not a number');
    await assert.rejects(client.incr(s), /ERR value is not an integer or out of range/);

    const ex = book.key('setex');
    assert.equal(await client.setEx(ex, 100, 'short-lived'), 'OK');
    assert.equal(await client.get(ex), 'short-lived');
    const ttl = await client.ttl(ex);
    assert.ok(ttl > 90 && ttl <= 100, `ttl ${ttl}`);

    const gd = book.key('getdel');
    await client.set(gd, 'once');
    assert.equal(await client.getDel(gd), 'once');
    assert.equal(await client.getDel(gd), null);
    assert.equal(await client.exists(gd), 0);

    const empty = book.key('empty');
    assert.equal(await client.set(empty, ''), 'OK');
    assert.equal(await client.get(empty), '');
    assert.equal(await client.strLen(empty), 0);

    const uni = book.key('unicode:é✓');
    assert.equal(await client.set(uni, 'añ ✓ 日本 🚀'), 'OK');
    assert.equal(await client.get(uni), 'añ ✓ 日本 🚀');
  });

  test('binary-safe values and a 2 MiB value', async () => {
    const bin = book.key('bin');
    const bytes = Buffer.from([0, 13, 10, 36, 42, 255, 0, 13, 10, 43, 45, 58]);
    await client.set(bin, bytes);
    assert.deepEqual(await client.get(commandOptions({ returnBuffers: true }), bin), bytes);

    const big = book.key('big');
    const value = 'x'.repeat(2 * 1024 * 1024 - 3) + '\r\n!';
    await client.set(big, value);
    assert.equal(await client.strLen(big), value.length);
    assert.equal(await client.get(big), value);
  });

  test('MSET / MGET across the three masters', async () => {
    const keys = book.spread('mset', 2);
    const pairs = keys.map((k, i) => [k, `value-${i}`]);
    assert.equal(await client.mSet(pairs), 'OK');
    const missing = book.keyIn('mget:missing', 1);
    const order = [keys[5], missing, keys[0], keys[3], keys[1], keys[4], keys[2], keys[0]];
    assert.deepEqual(await client.mGet(order),
      ['value-5', null, 'value-0', 'value-3', 'value-1', 'value-4', 'value-2', 'value-0']);
  });

  test('hashes', async () => {
    const h = book.key('hash');
    assert.equal(await client.hSet(h, { name: 'bot-1', lang: 'en', hits: '10' }), 3);
    assert.equal(await client.hSet(h, 'lang', 'fr'), 0);
    assert.equal(await client.hGet(h, 'lang'), 'fr');
    assert.equal(await client.hGet(h, 'nope'), null);
    assert.deepEqual(plain(await client.hGetAll(h)), { name: 'bot-1', lang: 'fr', hits: '10' });
    assert.equal(await client.hIncrBy(h, 'hits', 5), 15);
    assert.deepEqual(await client.hmGet(h, ['hits', 'nope', 'name']), ['15', null, 'bot-1']);
    assert.equal(await client.hExists(h, 'name'), true);
    assert.equal(await client.hExists(h, 'nope'), false);
    assert.equal(await client.hLen(h), 3);
    assert.equal(await client.hDel(h, ['name', 'nope']), 1);
    assert.deepEqual((await client.hKeys(h)).sort(), ['hits', 'lang']);
    assert.deepEqual(plain(await client.hGetAll(book.key('hash:missing'))), {});
  });

  test('sorted sets', async () => {
    const z = book.key('zset');
    assert.equal(await client.zAdd(z, [
      { score: 3, value: 'c' }, { score: 1, value: 'a' }, { score: 2, value: 'b' }, { score: 2.5, value: 'bb' },
    ]), 4);
    assert.equal(await client.zAdd(z, { score: 10, value: 'a' }), 0);
    assert.deepEqual(await client.zRange(z, 0, -1), ['b', 'bb', 'c', 'a']);
    assert.deepEqual(await client.zRangeWithScores(z, 0, -1), [
      { value: 'b', score: 2 }, { value: 'bb', score: 2.5 }, { value: 'c', score: 3 }, { value: 'a', score: 10 },
    ]);
    assert.equal(await client.zIncrBy(z, 0.5, 'c'), 3.5);
    assert.equal(await client.zIncrBy(z, -4, 'new'), -4);
    assert.equal(await client.zScore(z, 'c'), 3.5);
    assert.equal(await client.zScore(z, 'none'), null);
    assert.deepEqual(await client.zRangeByScore(z, 2, 3.5), ['b', 'bb', 'c']);
    assert.deepEqual(await client.zRangeByScore(z, '(2', '+inf'), ['bb', 'c', 'a']);
    assert.deepEqual(await client.zRangeByScore(z, '-inf', '+inf', { LIMIT: { offset: 1, count: 2 } }), ['b', 'bb']);
    assert.deepEqual(await client.zRangeByScoreWithScores(z, '(3', 100), [
      { value: 'c', score: 3.5 }, { value: 'a', score: 10 },
    ]);
    assert.deepEqual(await client.zRange(z, 0, 1, { REV: true }), ['a', 'c']);
    assert.equal(await client.zRank(z, 'bb'), 2);
    assert.equal(await client.zCard(z), 5);
    assert.equal(await client.zRem(z, ['new', 'none']), 1);
    assert.equal(await client.zCard(z), 4);
  });

  test('lists', async () => {
    const l = book.key('list');
    assert.equal(await client.rPush(l, ['b', 'c', 'd']), 3);
    assert.equal(await client.lPush(l, 'a'), 4);
    assert.deepEqual(await client.lRange(l, 0, -1), ['a', 'b', 'c', 'd']);
    assert.equal(await client.lLen(l), 4);
    assert.equal(await client.lIndex(l, -1), 'd');
    assert.equal(await client.lPop(l), 'a');
    assert.equal(await client.rPop(l), 'd');
    assert.deepEqual(await client.lRange(l, 0, -1), ['b', 'c']);
    assert.equal(await client.lPop(book.key('list:missing')), null);

    const long = book.key('list:long');
    const items = Array.from({ length: 20000 }, (_, i) => `item-${i}`);
    assert.equal(await client.rPush(long, items), items.length);
    assert.deepEqual(await client.lRange(long, 0, -1), items);
    assert.equal(await client.lTrim(long, 0, 9), 'OK');
    assert.deepEqual(await client.lRange(long, 0, -1), items.slice(0, 10));
  });

  test('sets', async () => {
    const a = book.key('{sets}a');
    const b = book.key('{sets}b');
    assert.equal(await client.sAdd(a, ['x', 'y', 'z', 'x']), 3);
    assert.equal(await client.sAdd(b, ['y', 'z', 'w']), 3);
    assert.deepEqual((await client.sMembers(a)).sort(), ['x', 'y', 'z']);
    assert.equal(await client.sIsMember(a, 'x'), true);
    assert.equal(await client.sIsMember(a, 'w'), false);
    assert.equal(await client.sCard(a), 3);
    // Same hash tag, so same slot: multi-key set commands are allowed.
    assert.deepEqual((await client.sInter([a, b])).sort(), ['y', 'z']);
    assert.deepEqual((await client.sUnion([a, b])).sort(), ['w', 'x', 'y', 'z']);
    assert.equal(await client.sRem(a, ['x', 'nope']), 1);
    assert.deepEqual((await client.sMembers(a)).sort(), ['y', 'z']);
  });

  test('streams: XADD MAXLEN ~, XRANGE with an exclusive start, XLEN', async () => {
    const s = book.key('stream');
    const ids = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await client.xAdd(s, '*', { n: String(i), who: 'bot' },
        { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: 1000 } }));
    }
    for (const id of ids) assert.match(id, /^\d+-\d+$/);
    assert.equal(await client.xLen(s), 5);

    const all = await client.xRange(s, '-', '+');
    assert.deepEqual(all.map((e) => e.id), ids);
    assert.deepEqual(all.map((e) => plain(e.message)), [0, 1, 2, 3, 4].map((i) => ({ n: String(i), who: 'bot' })));

    const after2 = await client.xRange(s, `(${ids[1]}`, '+');
    assert.deepEqual(after2.map((e) => e.id), ids.slice(2));
    const page = await client.xRange(s, `(${ids[0]}`, '+', { COUNT: 2 });
    assert.deepEqual(page.map((e) => e.id), ids.slice(1, 3));
    assert.deepEqual(await client.xRange(s, `(${ids[4]}`, '+'), []);

    // Explicit ids and an exact MAXLEN trim.
    const t = book.key('stream:trim');
    for (let i = 1; i <= 6; i++) {
      assert.equal(await client.xAdd(t, `7-${i}`, { i: String(i) },
        { TRIM: { strategy: 'MAXLEN', strategyModifier: '=', threshold: 3 } }), `7-${i}`);
    }
    assert.equal(await client.xLen(t), 3);
    assert.deepEqual((await client.xRange(t, '-', '+')).map((e) => e.id), ['7-4', '7-5', '7-6']);
    assert.deepEqual((await client.xRange(t, '(7-4', '+')).map((e) => plain(e.message)), [{ i: '5' }, { i: '6' }]);
    await assert.rejects(client.xAdd(t, '7-1', { i: 'old' }), /equal or smaller than the target stream top item/);
  });

  test('pipeline: Promise.all of 3000 commands over all masters, in order', async () => {
    const keys = book.spread('pipe', 100);
    const sets = keys.map((k, i) => client.set(k, `p${i}`));
    const gets = keys.map((k) => client.get(k));
    const incrs = keys.map((k) => client.append(k, '!'));
    const [setReplies, getReplies, appendReplies] = await Promise.all(
      [Promise.all(sets), Promise.all(gets), Promise.all(incrs)]);
    assert.deepEqual(setReplies, keys.map(() => 'OK'));
    assert.deepEqual(getReplies, keys.map((_, i) => `p${i}`));
    assert.deepEqual(appendReplies, keys.map((_, i) => `p${i}!`.length));
    const more = await Promise.all(keys.flatMap((k) => [client.strLen(k), client.get(k)]));
    assert.deepEqual(more, keys.flatMap((_, i) => [`p${i}!`.length, `p${i}!`]));
  });

  test('pipeline: multi().execAsPipeline() (no MULTI/EXEC), error kept in place', async () => {
    const [k0, k1, k2] = book.spread('batch', 1);
    const k3 = book.keyIn('batch:append', 2);
    const replies = await client.multi()
      .set(k0, '1').incr(k0).set(k1, 'x').get(k1).hSet(k2, 'f', 'v').hGet(k2, 'f').ping()
      .execAsPipeline();
    assert.deepEqual(replies, ['OK', 2, 'OK', 'x', 1, 'v', 'PONG']);

    // node-redis rejects a pipeline with its first error reply; the
    // commands around it still ran, each on its own key's master.
    await assert.rejects(
      client.multi().incr(k0).incr(k1).append(k3, 'abc').execAsPipeline(),
      /ERR value is not an integer or out of range/);
    assert.deepEqual(await client.multi().get(k0).get(k1).get(k3).execAsPipeline(), ['3', 'x', 'abc']);
  });

  test('multi-key DEL / EXISTS / UNLINK / TOUCH across the three masters', async () => {
    const keys = book.spread('multi', 3);
    const missing = book.keyIn('multi:missing', 2);
    await client.mSet(keys.map((k) => [k, k]));
    assert.deepEqual(await client.mGet(keys), keys);
    assert.equal(await client.exists(keys), 9);
    assert.equal(await client.exists([keys[0], missing, keys[0], keys[8], keys[4]]), 4);
    assert.equal(await client.touch([keys[1], missing, keys[2]]), 2);
    assert.equal(await client.del([keys[0], keys[1], missing, keys[2], keys[0]]), 3);
    assert.equal(await client.exists(keys), 6);
    assert.deepEqual(await client.mGet(keys.slice(0, 4)), [null, null, null, keys[3]]);
    assert.equal(await client.unlink([keys[3], keys[4], keys[5], missing]), 3);
    assert.equal(await client.del(keys), 3);
    assert.equal(await client.exists(keys), 0);
    assert.deepEqual(await client.mGet(keys), keys.map(() => null));
    assert.equal(await client.del(keys), 0);
  });
});
