'use strict';
// Pub/Sub through the proxy with ioredis 5 and node-redis 4 as plain
// single-server clients, as the courier Redis adapters use them: one
// connection publishes, another is subscribed (with a pattern), and every
// message arrives, in order. Also: SUBSCRIBE of plain channels, unsubscribe,
// sharded pub/sub (SSUBSCRIBE/SPUBLISH), and PUBSUB NUMSUB/NUMPAT.

const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const Redis = require('ioredis');
const { createClient } = require('redis');
const { REDIS_URL } = require('./lib/env');

const run = `${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
const N = 2000;

function ioredis() {
  const r = new Redis(REDIS_URL, {
    connectTimeout: 5000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  return r;
}

// Resolves with the messages once `count` have come, in arrival order.
function collect(count, timeoutMs) {
  let resolve, reject;
  const got = [];
  const done = new Promise((res, rej) => { resolve = res; reject = rej; });
  const timer = setTimeout(() => reject(new Error(`only ${got.length} of ${count} messages`)),
    timeoutMs);
  return {
    done,
    push(m) {
      got.push(m);
      if (got.length === count) {
        clearTimeout(timer);
        resolve(got.slice());
      }
    },
  };
}

describe('pub/sub with ioredis 5', { timeout: 60000 }, () => {
  const open = [];
  after(async () => { await Promise.all(open.map((r) => r.quit().catch(() => {}))); });

  test('pattern subscriber and publisher (courier adapter)', async () => {
    const pub = ioredis();
    const sub = ioredis();
    open.push(pub, sub);
    const prefix = `courier:${run}:io:`;
    const seen = collect(N, 30000);
    sub.on('pmessage', (pattern, channel, message) => seen.push({ pattern, channel, message }));
    assert.equal(await sub.psubscribe(`${prefix}*`), 1);
    const sent = [];
    for (let i = 0; i < N; i++) sent.push(pub.publish(`${prefix}room${i % 5}`, `m${i}`));
    // the subscriber's connection is on the master PUBLISH goes to: counted
    assert.ok((await Promise.all(sent)).every((n) => n === 1));
    const got = await seen.done;
    got.forEach((m, i) => {
      assert.equal(m.pattern, `${prefix}*`);
      assert.equal(m.channel, `${prefix}room${i % 5}`);
      assert.equal(m.message, `m${i}`);
    });
  });

  test('channels, unsubscribe, PUBSUB NUMSUB', async () => {
    const pub = ioredis();
    const sub = ioredis();
    open.push(pub, sub);
    const a = `chan:${run}:a`, b = `chan:${run}:b`;
    assert.equal(await sub.subscribe(a, b), 2);
    assert.deepEqual(await pub.pubsub('NUMSUB', a, b), [a, 1, b, 1]);
    const seen = collect(2, 10000);
    sub.on('message', (channel, message) => seen.push([channel, message]));
    await pub.publish(a, 'one');
    await pub.publish(b, 'two');
    assert.deepEqual(await seen.done, [[a, 'one'], [b, 'two']]);
    assert.equal(await sub.unsubscribe(a), 1);
    assert.equal(await pub.publish(a, 'gone'), 0);
    await sub.unsubscribe();
    assert.equal(await sub.ping(), 'PONG');   // out of subscribed mode again
  });

  test('sharded pub/sub', async () => {
    const pub = ioredis();
    const sub = ioredis();
    open.push(pub, sub);
    const ch = `{shard${run}}:x`, ch2 = `{shard${run}}:y`;
    const seen = collect(3, 10000);
    sub.on('smessage', (channel, message) => seen.push([channel, message]));
    await sub.ssubscribe(ch, ch2);
    assert.equal(await pub.spublish(ch, '1'), 1);
    assert.equal(await pub.spublish(ch2, '2'), 1);
    assert.equal(await pub.spublish(ch, '3'), 1);
    assert.deepEqual(await seen.done, [[ch, '1'], [ch2, '2'], [ch, '3']]);
  });
});

describe('pub/sub with node-redis 4', { timeout: 60000 }, () => {
  const open = [];
  after(async () => { await Promise.all(open.map((c) => c.quit().catch(() => {}))); });

  async function client() {
    const c = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false } });
    c.on('error', () => {});
    await c.connect();
    open.push(c);
    return c;
  }

  test('pattern subscriber and publisher', async () => {
    const pub = await client();
    const sub = await client();
    const prefix = `courier:${run}:nr:`;
    const seen = collect(N, 30000);
    await sub.pSubscribe(`${prefix}*`, (message, channel) => seen.push({ message, channel }));
    const sent = [];
    for (let i = 0; i < N; i++) sent.push(pub.publish(`${prefix}t${i % 3}`, `n${i}`));
    const receivers = await Promise.all(sent);
    assert.ok(receivers.every((n) => n === 1));
    const got = await seen.done;
    got.forEach((m, i) => {
      assert.equal(m.channel, `${prefix}t${i % 3}`);
      assert.equal(m.message, `n${i}`);
    });
    await sub.pUnsubscribe(`${prefix}*`);
    assert.equal(await pub.publish(`${prefix}t0`, 'late'), 0);
  });

  test('sharded: sSubscribe and sPublish', async () => {
    const pub = await client();
    const sub = await client();
    const ch = `{nrshard${run}}:a`;
    const seen = collect(2, 10000);
    await sub.sSubscribe(ch, (message, channel) => seen.push([channel, message]));
    assert.equal(await pub.sPublish(ch, 'x'), 1);
    assert.equal(await pub.sPublish(ch, 'y'), 1);
    assert.deepEqual(await seen.done, [[ch, 'x'], [ch, 'y']]);
    await sub.sUnsubscribe(ch);
    assert.equal(await pub.sPublish(ch, 'z'), 0);
  });

  test('channel subscriber, PUBSUB CHANNELS and NUMPAT', async () => {
    const pub = await client();
    const sub = await client();
    const ch = `nr:${run}:c`;
    const seen = collect(1, 10000);
    await sub.subscribe(ch, (message, channel) => seen.push([channel, message]));
    assert.ok((await pub.pubSubChannels(`nr:${run}:*`)).includes(ch));
    assert.equal(typeof (await pub.pubSubNumPat()), 'number');
    assert.equal(await pub.publish(ch, 'hello'), 1);
    assert.deepEqual(await seen.done, [[ch, 'hello']]);
  });
});
