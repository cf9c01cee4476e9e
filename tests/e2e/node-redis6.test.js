'use strict';
// node-redis 6 (npm redis@6, here the alias `redis6`) with its DEFAULT
// options, on the TCP port (REDIS_URL) and on the Unix socket
// (REDIS_UNIX_SOCKET). node-redis 6 speaks RESP3 by default
// (@redis/client DEFAULT_RESP = 3): nothing here asks for it.
//
// What node-redis 6.3.1 sends on every new connection, pipelined in one
// write before any other command (captured on the wire against
// redis-server 7.0):
//   HELLO 3
//   CLIENT SETINFO LIB-VER 6.3.1
//   CLIENT SETINFO LIB-NAME node-redis
//   CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type external-ip
//     (only when it was given a host, i.e. a url or socket.host: not on a
//      Unix socket; "external-ip" for a host that is an IP address;
//      errors on the CLIENT commands are ignored, so 7.0's
//      "-ERR unknown subcommand" is fine; an error on HELLO is not: with
//      -NOPROTO connect() never resolves, the client reconnects for ever)
// With a name it would add SETNAME to HELLO; with a client-side cache,
// CLIENT TRACKING ON. Neither is used here (defaults only).
//
// Checked: the handshake (HELLO's map says proto 3, CLIENT INFO says resp=3),
// strings, HGETALL as a RESP3 map (a plain object by default; a Map when the
// reply type is mapped), SMEMBERS as a RESP3 set (an Array by default; a Set
// when mapped), ZSCORE and ZRANGE WITHSCORES as doubles, EVAL and scripts
// with redis.setresp(3) returning booleans, null, a double and a map,
// WATCH/MULTI/EXEC (and a WATCH that fails after a concurrent change), BLPOP
// woken by another client, streams (XADD, XREAD, XREAD BLOCK), pub/sub
// (messages as RESP3 pushes, PSUBSCRIBE, SSUBSCRIBE) and a subscribed
// connection running other commands (allowed in RESP3).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { RESP_TYPES, WatchError } = require('redis6');
const { KeyBook } = require('./lib/env');
const { TARGETS, nodeRedis6, duplicate6, close, waitFor } = require('./lib/resp3');

// node-redis builds objects without a prototype; compare them as plain ones.
const plain = (obj) => ({ ...obj });

for (const target of TARGETS) {
  describe(`node-redis 6 (default options, RESP3) on the ${target.name}`,
    { timeout: 60000, skip: target.skip }, () => {
      const book = new KeyBook(`nr6-${target.path ? 'unix' : 'tcp'}`);
      const open = [];
      let c;

      before(async () => {
        c = await nodeRedis6(target);
        open.push(c);
      }, { timeout: 20000 });

      after(async () => {
        if (c && c.isReady) await Promise.all(book.all().map((k) => c.del(k)));
        await Promise.all(open.map(close));
      });

      async function another() {
        const d = await duplicate6(c);
        open.push(d);
        return d;
      }

      test('the handshake: HELLO 3, proto 3 and resp=3', async () => {
        const hello = await c.hello();          // HELLO without protover: the current state
        assert.equal(hello.proto, 3);
        assert.equal(hello.server, 'redis');
        assert.equal(typeof hello.id, 'number');
        assert.ok(Array.isArray(hello.modules));
        const info = await c.clientInfo();
        assert.equal(info.resp, 3);
        assert.equal(info.id, hello.id);
        assert.match(await c.sendCommand(['CLIENT', 'INFO']), / resp=3(\s|$)/);
        if (target.path) assert.match(info.flags, /U/);
        assert.equal(await c.ping(), 'PONG');
      });

      test('GET / SET, and a pipeline of INCRs', async () => {
        const k = book.key('str');
        assert.equal(await c.set(k, 'v1'), 'OK');
        assert.equal(await c.get(k), 'v1');
        assert.equal(await c.set(k, 'v2', { NX: true }), null);
        assert.equal(await c.get(book.key('missing')), null);
        const uni = book.key('uni');
        await c.set(uni, 'añ ✓ 日本 🚀');
        assert.equal(await c.get(uni), 'añ ✓ 日本 🚀');
        const n = book.key('n');
        const replies = await Promise.all(Array.from({ length: 100 }, () => c.incr(n)));
        assert.deepEqual(replies, Array.from({ length: 100 }, (_, i) => i + 1));
        await assert.rejects(c.incr(k), /ERR value is not an integer or out of range/);
      });

      test('HGETALL is a RESP3 map', async () => {
        const h = book.key('hash');
        assert.equal(await c.hSet(h, { name: 'bot-1', lang: 'en', hits: '10' }), 3);
        assert.deepEqual(plain(await c.hGetAll(h)), { name: 'bot-1', lang: 'en', hits: '10' });
        // the raw reply is a map too (RESP2 would give a flat array here)
        assert.deepEqual(plain(await c.sendCommand(['HGETALL', h])), { name: 'bot-1', lang: 'en', hits: '10' });
        const asMap = await c.withTypeMapping({ [RESP_TYPES.MAP]: Map }).hGetAll(h);
        assert.ok(asMap instanceof Map, 'HGETALL did not come as a RESP3 map (%)');
        assert.deepEqual([...asMap.entries()].sort(), [['hits', '10'], ['lang', 'en'], ['name', 'bot-1']]);
        assert.deepEqual(plain(await c.hGetAll(book.key('hash:missing'))), {});
        // CONFIG GET is a map as well
        assert.equal(typeof plain(await c.configGet('maxmemory-policy'))['maxmemory-policy'], 'string');
      });

      test('SMEMBERS is a RESP3 set', async () => {
        const s = book.key('set');
        assert.equal(await c.sAdd(s, ['x', 'y', 'z']), 3);
        // node-redis 6 maps a RESP3 set to an Array by default
        const members = await c.sMembers(s);
        assert.ok(Array.isArray(members));
        assert.deepEqual(members.sort(), ['x', 'y', 'z']);
        const asSet = await c.withTypeMapping({ [RESP_TYPES.SET]: Set }).sMembers(s);
        assert.ok(asSet instanceof Set, 'SMEMBERS did not come as a RESP3 set (~)');
        assert.deepEqual([...asSet].sort(), ['x', 'y', 'z']);
        assert.equal(await c.sIsMember(s, 'y'), 1);
        assert.equal(await c.sIsMember(s, 'w'), 0);
      });

      test('ZSCORE and ZRANGE WITHSCORES are doubles', async () => {
        const z = book.key('zset');
        assert.equal(await c.zAdd(z, [
          { score: 1.5, value: 'a' }, { score: 2, value: 'b' }, { score: -0.25, value: 'c' },
        ]), 3);
        assert.equal(await c.zScore(z, 'a'), 1.5);
        assert.equal(await c.zScore(z, 'nope'), null);
        // raw: a double (,1.5) is a number; a RESP2 bulk string would be '1.5'
        assert.equal(await c.sendCommand(['ZSCORE', z, 'a']), 1.5);
        assert.deepEqual(await c.zRangeWithScores(z, 0, -1),
          [{ value: 'c', score: -0.25 }, { value: 'a', score: 1.5 }, { value: 'b', score: 2 }]);
        // raw: RESP3 gives [member, score] pairs, RESP2 a flat array of strings
        assert.deepEqual(await c.sendCommand(['ZRANGE', z, '0', '-1', 'WITHSCORES']),
          [['c', -0.25], ['a', 1.5], ['b', 2]]);
        assert.equal(await c.zIncrBy(z, 0.5, 'a'), 2);
      });

      test('EVAL, and scripts with redis.setresp(3)', async () => {
        const k = book.key('lua');
        assert.equal(await c.eval("return redis.call('SET', KEYS[1], ARGV[1])",
          { keys: [k], arguments: ['lv'] }), 'OK');
        assert.equal(await c.eval("return redis.call('GET', KEYS[1])", { keys: [k] }), 'lv');
        // without setresp(3) a Lua true is the integer 1 (RESP2 conversion)
        assert.equal(await c.eval('return true'), 1);
        assert.equal(await c.eval('redis.setresp(3); return true'), true);
        assert.equal(await c.eval('redis.setresp(3); return false'), false);
        assert.equal(await c.eval("redis.setresp(3); return redis.call('GET', KEYS[1])",
          { keys: [book.key('lua:missing')] }), null);
        assert.equal(await c.eval('redis.setresp(3); return {double=3.5}'), 3.5);
        const h = book.key('lua:hash');
        await c.hSet(h, { f: 'v' });
        assert.deepEqual(plain(await c.eval("redis.setresp(3); return redis.call('HGETALL', KEYS[1])",
          { keys: [h] })), { f: 'v' });
        const sha = await c.scriptLoad("return redis.call('INCRBY', KEYS[1], ARGV[1])");
        const n = book.key('lua:n');
        assert.equal(await c.evalSha(sha, { keys: [n], arguments: ['5'] }), 5);
        assert.equal(await c.evalSha(sha, { keys: [n], arguments: ['5'] }), 10);
        await assert.rejects(c.eval("return redis.call('NOSUCHCOMMAND')"), /Unknown Redis command|unknown command/i);
      });

      test('WATCH / MULTI / EXEC', async () => {
        const a = book.key('{tx}:a');
        const b = book.key('{tx}:b');
        assert.deepEqual(await c.multi().set(a, '1').incr(a).rPush(b, ['x', 'y']).lRange(b, 0, -1).exec(),
          ['OK', 2, 2, ['x', 'y']]);
        // WATCH on a connection of its own; a change from another one fails EXEC
        const w = await another();
        const other = await another();
        await w.watch(a);
        assert.equal(await w.get(a), '2');
        await other.incr(a);
        await assert.rejects(w.multi().set(a, '100').exec(), WatchError);
        assert.equal(await c.get(a), '3');
        await w.watch(a);
        assert.deepEqual(await w.multi().incrBy(a, 10).exec(), [13]);
      });

      test('BLPOP woken by another client', async () => {
        const l = book.key('list');
        const blocker = await another();
        const started = Date.now();
        const popped = blocker.blPop(l, 5);
        setTimeout(() => { c.rPush(l, 'job-1').catch(() => {}); }, 150);
        assert.deepEqual(plain(await popped), { key: l, element: 'job-1' });
        assert.ok(Date.now() - started < 4000);
        // and one that times out: a RESP3 null
        assert.equal(await blocker.blPop(l, 0.1), null);
      });

      test('streams: XADD, XRANGE, XREAD and XREAD BLOCK', async () => {
        const s = book.key('stream');
        const id1 = await c.xAdd(s, '*', { kind: 'a', n: '1' });
        const id2 = await c.xAdd(s, '*', { kind: 'b', n: '2' });
        assert.match(id1, /^\d+-\d+$/);
        const range = await c.xRange(s, '-', '+');
        assert.deepEqual(range.map((e) => [e.id, plain(e.message)]),
          [[id1, { kind: 'a', n: '1' }], [id2, { kind: 'b', n: '2' }]]);
        const read = await c.xRead({ key: s, id: '0' });
        assert.equal(read.length, 1);
        assert.equal(read[0].name, s);
        assert.deepEqual(read[0].messages.map((e) => e.id), [id1, id2]);
        // XREAD's RESP3 reply is a map keyed by stream name
        const raw = await c.sendCommand(['XREAD', 'STREAMS', s, '0']);
        assert.ok(!Array.isArray(raw) && Object.keys(raw).length === 1 && raw[s],
          'XREAD did not come as a RESP3 map');
        const reader = await another();
        const blocked = reader.xRead({ key: s, id: '$' }, { BLOCK: 5000 });
        setTimeout(() => { c.xAdd(s, '*', { kind: 'c' }).catch(() => {}); }, 150);
        const got = await blocked;
        assert.equal(got[0].messages.length, 1);
        assert.deepEqual(plain(got[0].messages[0].message), { kind: 'c' });
        assert.equal(await c.xLen(s), 3);
      });

      test('pub/sub: messages arrive as pushes; PSUBSCRIBE and SSUBSCRIBE', async () => {
        const sub = await another();
        const pub = await another();
        const ch = book.key('chan');
        const got = [];
        await sub.subscribe(ch, (message, channel) => got.push(['m', channel, message]));
        await sub.pSubscribe(`${book.prefix}pat:*`, (message, channel) => got.push(['p', channel, message]));
        const shard = book.key('{shard}:ch');
        await sub.sSubscribe(shard, (message, channel) => got.push(['s', channel, message]));
        assert.equal(await pub.publish(ch, 'one'), 1);
        assert.equal(await pub.publish(`${book.prefix}pat:x`, 'two'), 1);
        assert.equal(await pub.sPublish(shard, 'three'), 1);
        await waitFor(() => got.length >= 3, 5000, 'three messages');
        assert.deepEqual(got, [['m', ch, 'one'], ['p', `${book.prefix}pat:x`, 'two'], ['s', shard, 'three']]);
        await sub.unsubscribe(ch);
        await sub.pUnsubscribe(`${book.prefix}pat:*`);
        await sub.sUnsubscribe(shard);
        assert.equal(await pub.publish(ch, 'late'), 0);
      });

      test('a subscribed RESP3 connection runs other commands', async () => {
        const sub = await another();
        const ch = book.key('chan2');
        const k = book.key('while-subscribed');
        const got = [];
        await sub.subscribe(ch, (message) => got.push(message));
        // in RESP2 these would be refused (only (P|S)SUBSCRIBE, PING, ... allowed)
        assert.equal(await sub.set(k, 'v'), 'OK');
        assert.equal(await sub.get(k), 'v');
        assert.equal(await sub.ping(), 'PONG');
        assert.equal(await c.publish(ch, 'between'), 1);
        assert.equal(await sub.incr(book.key('sub-n')), 1);
        await waitFor(() => got.length === 1, 5000, 'the message');
        assert.deepEqual(got, ['between']);
        const info = await sub.clientInfo();
        assert.equal(info.resp, 3);
        assert.equal(info.sub, 1);
        await sub.unsubscribe(ch);
        assert.equal(await sub.get(k), 'v');
      });
    });
}
