'use strict';
// ioredis 6 (npm ioredis@6, here the alias `ioredis6`) with its DEFAULT
// options, on the TCP port (REDIS_URL) and on the Unix socket
// (REDIS_UNIX_SOCKET).
//
// ioredis 6 really does default to RESP3 (DEFAULT_REDIS_OPTIONS has
// protocol: 3, replyMapping: "legacy"). What 6.0.0 sends on every new
// connection (captured on the wire against redis-server 7.0), pipelined:
// all three are sent without waiting for HELLO's reply:
//   hello 3
//   client SETINFO LIB-VER 6.0.0
//   client SETINFO LIB-NAME ioredis
// then, once those are answered, its ready check:
//   info
// (with connectionName it adds `client setname NAME` after HELLO, as
// BullMQ's blocking connection does; with a password, HELLO 3 AUTH default
// PASS). Errors on the CLIENT SETINFO lines are ignored (7.0 answers
// "-ERR unknown subcommand"). If HELLO fails with NOPROTO (or "unknown
// command ... HELLO"), ioredis 6 silently downgrades that connection to
// RESP2 and sends the rest again (client SETINFO ×2, info): it still works,
// but in RESP2. So the first test below checks that the connection really
// is RESP3 (CLIENT INFO resp=3); the others pass in either protocol.
//
// With replyMapping "legacy" ioredis 6 gives RESP3 replies RESP2 shapes:
// a map is a flat array (HGETALL still becomes an object, as in ioredis 5),
// a double is a string ('1.5'), a RESP3 boolean is 1 / 0, a null is null.
//
// Checked: the handshake, strings, HGETALL, SMEMBERS, ZSCORE and ZRANGE
// WITHSCORES, EVAL and redis.setresp(3) scripts, WATCH/MULTI/EXEC, BLPOP
// woken by another client, streams (XADD, XRANGE, XREAD, XREAD BLOCK),
// pub/sub (pushes; PSUBSCRIBE, SSUBSCRIBE) and a subscribed connection
// running other commands (allowed in RESP3; ioredis 6 refuses that itself
// only in RESP2 subscriber mode).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { KeyBook } = require('./lib/env');
const { TARGETS, ioredis6, close, waitFor, parseClientInfo } = require('./lib/resp3');

for (const target of TARGETS) {
  describe(`ioredis 6 (default options) on the ${target.name}`,
    { timeout: 60000, skip: target.skip }, () => {
      const book = new KeyBook(`io6-${target.path ? 'unix' : 'tcp'}`);
      const open = [];
      let r;

      before(async () => {
        r = await ioredis6(target);
        open.push(r);
      }, { timeout: 20000 });

      after(async () => {
        if (r && r.status === 'ready') await Promise.all(book.all().map((k) => r.del(k)));
        await Promise.all(open.map(close));
      });

      async function another() {
        const d = await ioredis6(target);
        open.push(d);
        return d;
      }

      test('the handshake: RESP3 (CLIENT INFO resp=3, HELLO proto 3)', async () => {
        const info = parseClientInfo(await r.client('INFO'));
        assert.equal(info.resp, '3', 'ioredis 6 fell back to RESP2 (HELLO 3 was refused?)');
        if (target.path) assert.match(info.flags, /U/);
        const hello = await r.hello();          // flat [field, value, ...] (legacy mapping)
        assert.ok(Array.isArray(hello));
        assert.equal(hello[hello.indexOf('proto') + 1], 3);
        assert.equal(hello[hello.indexOf('server') + 1], 'redis');
        assert.equal(String(hello[hello.indexOf('id') + 1]), info.id);
        assert.equal(await r.ping(), 'PONG');
      });

      test('GET / SET, and a pipeline', async () => {
        const k = book.key('str');
        assert.equal(await r.set(k, 'v1'), 'OK');
        assert.equal(await r.get(k), 'v1');
        assert.equal(await r.set(k, 'v2', 'NX'), null);
        assert.equal(await r.get(book.key('missing')), null);
        const n = book.key('n');
        const p = r.pipeline();
        for (let i = 0; i < 100; i++) p.incr(n);
        const res = await p.exec();
        assert.deepEqual(res, Array.from({ length: 100 }, (_, i) => [null, i + 1]));
        await assert.rejects(r.incr(k), /ERR value is not an integer or out of range/);
      });

      test('HGETALL (a RESP3 map) and CONFIG GET', async () => {
        const h = book.key('hash');
        assert.equal(await r.hset(h, { name: 'bot-1', lang: 'en', hits: '10' }), 3);
        assert.deepEqual(await r.hgetall(h), { name: 'bot-1', lang: 'en', hits: '10' });
        assert.deepEqual(await r.hgetall(book.key('hash:missing')), {});
        // a raw map under the legacy mapping: a flat array
        const raw = await r.call('HGETALL', h);
        assert.ok(Array.isArray(raw));
        assert.deepEqual(raw.length, 6);
        const cfg = await r.config('GET', 'maxmemory-policy');
        assert.equal(cfg[0], 'maxmemory-policy');
      });

      test('SMEMBERS (a RESP3 set)', async () => {
        const s = book.key('set');
        assert.equal(await r.sadd(s, 'x', 'y', 'z'), 3);
        assert.deepEqual((await r.smembers(s)).sort(), ['x', 'y', 'z']);
        assert.equal(await r.sismember(s, 'w'), 0);
      });

      test('ZSCORE and ZRANGE WITHSCORES (doubles, as strings)', async () => {
        const z = book.key('zset');
        assert.equal(await r.zadd(z, 1.5, 'a', 2, 'b', -0.25, 'c'), 3);
        assert.equal(await r.zscore(z, 'a'), '1.5');
        assert.equal(await r.zscore(z, 'nope'), null);
        assert.deepEqual(await r.zrange(z, 0, -1, 'WITHSCORES'), ['c', '-0.25', 'a', '1.5', 'b', '2']);
        assert.equal(await r.zincrby(z, 0.5, 'a'), '2');
      });

      test('EVAL, and scripts with redis.setresp(3)', async () => {
        const k = book.key('lua');
        assert.equal(await r.eval("return redis.call('SET', KEYS[1], ARGV[1])", 1, k, 'lv'), 'OK');
        assert.equal(await r.eval("return redis.call('GET', KEYS[1])", 1, k), 'lv');
        assert.equal(await r.eval('return true', 0), 1);
        // RESP3 #t / #f under the legacy mapping: 1 / 0 (in RESP2 a Lua false is a null)
        assert.equal(await r.eval('redis.setresp(3); return true', 0), 1);
        assert.equal(await r.eval('redis.setresp(3); return false', 0), 0);
        assert.equal(await r.eval("redis.setresp(3); return redis.call('GET', KEYS[1])", 1,
          book.key('lua:missing')), null);
        assert.equal(await r.eval('redis.setresp(3); return {double=3.5}', 0), '3.5');
        const h = book.key('lua:hash');
        await r.hset(h, 'f', 'v');
        assert.deepEqual(await r.eval("redis.setresp(3); return redis.call('HGETALL', KEYS[1])", 1, h),
          ['f', 'v']);
        r.defineCommand('incrByScript', { numberOfKeys: 1, lua: "return redis.call('INCRBY', KEYS[1], ARGV[1])" });
        const n = book.key('lua:n');
        assert.equal(await r.incrByScript(n, 5), 5);
        assert.equal(await r.incrByScript(n, 5), 10);
      });

      test('WATCH / MULTI / EXEC', async () => {
        const a = book.key('{tx}:a');
        const b = book.key('{tx}:b');
        assert.deepEqual(await r.multi().set(a, '1').incr(a).rpush(b, 'x', 'y').lrange(b, 0, -1).exec(),
          [[null, 'OK'], [null, 2], [null, 2], [null, ['x', 'y']]]);
        const w = await another();
        const other = await another();
        await w.watch(a);
        assert.equal(await w.get(a), '2');
        await other.incr(a);
        assert.equal(await w.multi().set(a, '100').exec(), null);   // aborted
        assert.equal(await r.get(a), '3');
        await w.watch(a);
        assert.deepEqual(await w.multi().incrby(a, 10).exec(), [[null, 13]]);
      });

      test('BLPOP woken by another client', async () => {
        const l = book.key('list');
        const blocker = await another();
        const popped = blocker.blpop(l, 5);
        setTimeout(() => { r.rpush(l, 'job-1').catch(() => {}); }, 150);
        assert.deepEqual(await popped, [l, 'job-1']);
        assert.equal(await blocker.blpop(l, 0.1), null);
      });

      test('streams: XADD, XRANGE, XREAD and XREAD BLOCK', async () => {
        const s = book.key('stream');
        const id1 = await r.xadd(s, '*', 'kind', 'a');
        const id2 = await r.xadd(s, '*', 'kind', 'b');
        assert.deepEqual(await r.xrange(s, '-', '+'), [[id1, ['kind', 'a']], [id2, ['kind', 'b']]]);
        assert.deepEqual(await r.xread('STREAMS', s, '0'), [[s, [[id1, ['kind', 'a']], [id2, ['kind', 'b']]]]]);
        const reader = await another();
        const blocked = reader.xread('BLOCK', 5000, 'STREAMS', s, '$');
        setTimeout(() => { r.xadd(s, '*', 'kind', 'c').catch(() => {}); }, 150);
        const got = await blocked;
        assert.equal(got[0][0], s);
        assert.deepEqual(got[0][1][0][1], ['kind', 'c']);
        assert.equal(await r.xlen(s), 3);
      });

      test('pub/sub: messages arrive as pushes; PSUBSCRIBE and SSUBSCRIBE', async () => {
        const sub = await another();
        const pub = await another();
        const ch = book.key('chan');
        const pat = `${book.prefix}pat:*`;
        const shard = book.key('{shard}:ch');
        const got = [];
        sub.on('message', (channel, message) => got.push(['m', channel, message]));
        sub.on('pmessage', (pattern, channel, message) => got.push(['p', channel, message]));
        sub.on('smessage', (channel, message) => got.push(['s', channel, message]));
        assert.equal(await sub.subscribe(ch), 1);
        assert.equal(await sub.psubscribe(pat), 2);
        assert.equal(await sub.ssubscribe(shard), 1);
        assert.equal(await pub.publish(ch, 'one'), 1);
        assert.equal(await pub.publish(`${book.prefix}pat:x`, 'two'), 1);
        assert.equal(await pub.spublish(shard, 'three'), 1);
        await waitFor(() => got.length >= 3, 5000, 'three messages');
        assert.deepEqual(got, [['m', ch, 'one'], ['p', `${book.prefix}pat:x`, 'two'], ['s', shard, 'three']]);
        await sub.unsubscribe(ch);
        await sub.punsubscribe(pat);
        await sub.sunsubscribe(shard);
        assert.equal(await pub.publish(ch, 'late'), 0);
      });

      test('a subscribed RESP3 connection runs other commands', async () => {
        const sub = await another();
        const ch = book.key('chan2');
        const k = book.key('while-subscribed');
        const got = [];
        sub.on('message', (channel, message) => got.push(message));
        assert.equal(await sub.subscribe(ch), 1);
        assert.equal(await sub.set(k, 'v'), 'OK');
        assert.equal(await sub.get(k), 'v');
        assert.equal(await sub.ping(), 'PONG');
        assert.equal(await r.publish(ch, 'between'), 1);
        assert.equal(await sub.incr(book.key('sub-n')), 1);
        await waitFor(() => got.length === 1, 5000, 'the message');
        assert.deepEqual(got, ['between']);
        const info = parseClientInfo(await sub.client('INFO'));
        assert.equal(info.resp, '3');
        assert.equal(info.sub, '1');
        await sub.unsubscribe(ch);
        assert.equal(await sub.get(k), 'v');
      });
    });
}
