'use strict';
// Valkey GLIDE 2 (npm @valkey/valkey-glide), the Valkey project's own
// client, in standalone mode with its default options, on the TCP port
// (REDIS_URL). GLIDE 2.5 cannot connect over a Unix socket at all
// (valkey-io/valkey-glide#4878), so it runs on TCP only.
//
// What GLIDE sends on a new connection (its Rust core, captured against
// redis-server 7.0): HELLO 3, CLIENT SETINFO LIB-NAME / LIB-VER, then
// INFO REPLICATION, whose `role:master` tells it the server is a primary:
// without it the client never connects ("No primary node found").
//
// Checked: the connection, strings and hashes, batches (atomic: MULTI/EXEC,
// and not: a pipeline over keys of every master), WATCH (kept and broken
// by a concurrent write), a script (EVALSHA, SCRIPT LOAD on NOSCRIPT),
// SCAN walked to cursor 0 finding every key it wrote, streams (XADD,
// XRANGE, XREAD BLOCK woken), BLPOP woken by another client, and pub/sub
// (GLIDE's subscriptions at creation, a message delivered).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const G = require('@valkey/valkey-glide');
const { REDIS_URL, KeyBook } = require('./lib/env');

const { GlideClient, Batch, Script } = G;
const url = new URL(REDIS_URL);
const ADDR = { addresses: [{ host: url.hostname, port: Number(url.port) }], requestTimeout: 5000 };
const keys = new KeyBook('glide');

const connect = (extra = {}) => GlideClient.createClient({ ...ADDR, ...extra });
const text = (v) => (v === null || v === undefined ? v : v.toString());

describe('Valkey GLIDE 2 through the proxy', () => {
  let c;
  before(async () => {
    c = await connect();
  });
  after(async () => {
    if (c) {
      const all = keys.all();
      if (all.length) await c.del(all);
      c.close();
    }
  });

  test('connects, and INFO REPLICATION says role:master', async () => {
    assert.equal(text(await c.ping()), 'PONG');
    const info = text(await c.info([G.InfoOptions.Replication]));
    assert.match(info, /^role:master\r$/m);
    assert.match(info, /^connected_slaves:0\r$/m);
  });

  test('strings and hashes', async () => {
    const k = keys.key('str'), h = keys.key('hash');
    assert.equal(await c.set(k, 'v1'), 'OK');
    assert.equal(text(await c.get(k)), 'v1');
    assert.equal(await c.hset(h, { a: '1', b: '2' }), 2);
    const all = await c.hgetall(h);
    const obj = Object.fromEntries(all.map(({ field, value }) => [text(field), text(value)]));
    assert.deepEqual(obj, { a: '1', b: '2' });
  });

  test('an atomic batch (MULTI/EXEC) and a pipeline over every master', async () => {
    const k = keys.key('{batch}n');
    const atomic = new Batch(true);
    atomic.set(k, '1');
    atomic.incr(k);
    atomic.get(k);
    assert.deepEqual((await c.exec(atomic, true)).map(text), ['OK', '2', '2']);

    const spread = [0, 1, 2].map((r) => keys.keyIn(`pipe${r}`, r));
    const pipe = new Batch(false);
    for (const key of spread) pipe.set(key, key);
    for (const key of spread) pipe.get(key);
    const got = (await c.exec(pipe, true)).map(text);
    assert.deepEqual(got, [...spread.map(() => 'OK'), ...spread]);
  });

  test('WATCH: the transaction runs, or not after a concurrent write', async () => {
    const k = keys.key('{watch}k');
    const other = await connect();
    try {
      await c.watch([k]);
      const ok = new Batch(true);
      ok.set(k, 'mine');
      assert.deepEqual((await c.exec(ok, true)).map(text), ['OK']);

      await c.watch([k]);
      await other.set(k, 'theirs');
      const lost = new Batch(true);
      lost.set(k, 'mine again');
      assert.equal(await c.exec(lost, true), null);
      assert.equal(text(await c.get(k)), 'theirs');
    } finally {
      other.close();
    }
  });

  test('a script, loaded on demand', async () => {
    const k = keys.key('{script}n');
    const s = new Script("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    assert.equal(await c.invokeScript(s, { keys: [k], args: ['5'] }), 5);
    assert.equal(await c.invokeScript(s, { keys: [k], args: ['2'] }), 7);
    s.release();
  });

  test('SCAN walked to cursor 0 finds every key written', async () => {
    const written = keys.spread('scan', 4);
    for (const key of written) await c.set(key, '1');
    const found = new Set();
    let cursor = '0';
    do {
      const [next, page] = await c.scan(cursor, { match: `${keys.prefix}scan*`, count: 100 });
      for (const key of page) found.add(text(key));
      cursor = text(next);
    } while (cursor !== '0');
    for (const key of written) assert.ok(found.has(key), `SCAN missed ${key}`);
  });

  test('streams: XADD, XRANGE, XREAD BLOCK woken', async () => {
    const s = keys.key('{stream}s');
    const id = text(await c.xadd(s, [['f', 'v']]));
    const range = await c.xrange(s, { value: '-' }, { value: '+' });
    assert.ok(range[id], `XRANGE has no ${id}`);
    const reader = await connect();
    try {
      const pending = reader.xread({ [s]: '$' }, { block: 5000 });
      await new Promise((r) => setTimeout(r, 200));
      const id2 = text(await c.xadd(s, [['g', 'w']]));
      const got = await pending;
      assert.ok(JSON.stringify(got).includes(id2), `XREAD BLOCK got ${JSON.stringify(got)}`);
    } finally {
      reader.close();
    }
  });

  test('BLPOP woken by another client', async () => {
    const q = keys.key('{queue}q');
    const waiter = await connect();
    try {
      const pending = waiter.blpop([q], 5);
      await new Promise((r) => setTimeout(r, 200));
      await c.rpush(q, ['job']);
      assert.deepEqual((await pending).map(text), [q, 'job']);
    } finally {
      waiter.close();
    }
  });

  test('pub/sub: a subscription at creation hears a message', async () => {
    const channel = keys.key('chan');
    const heard = [];
    const modes = G.GlideClientConfiguration.PubSubChannelModes;
    const sub = await connect({
      pubsubSubscriptions: {
        channelsAndPatterns: { [modes.Exact]: new Set([channel]) },
        callback: (msg) => heard.push(text(msg.message)),
      },
    });
    try {
      const end = Date.now() + 5000;
      while (heard.length === 0 && Date.now() < end) {
        await c.publish('hello', channel);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(heard.includes('hello'), `heard ${JSON.stringify(heard)}`);
    } finally {
      sub.close();
    }
  });
});
