'use strict';
// Cluster-mode clients of today with their DEFAULT options through the
// proxy: node-redis 6 `createCluster({ rootNodes: [{ url }] })` and ioredis 6
// `new Redis.Cluster([{ host, port }])`, both RESP3 by default. As in
// cluster-mode.test.js, the proxy presents itself as a one-node cluster
// owning every slot, so all commands go to the proxy. Checked: slot
// discovery, RESP3 on the node connection (CLIENT INFO resp=3), SET/GET/MGET
// on keys of all three masters, a multi-key command on one hash tag, HGETALL
// (a RESP3 map) and pub/sub through the cluster client.
//
// node-redis 6 discovers the slots on a connection of its own: HELLO 3,
// CLIENT SETINFO LIB-VER / LIB-NAME, then CLUSTER SLOTS, with
// reconnectStrategy false and maintNotifications disabled (so no
// CLIENT MAINT_NOTIFICATIONS there); then opens the node connection
// (HELLO 3, CLIENT SETINFO ×2, CLIENT MAINT_NOTIFICATIONS ON ...).
// An error on HELLO makes connect() reject at once.
//
// TCP only (a cluster client connects to the address CLUSTER SLOTS names).
// When REDIS_URL is a plain redis-server (cluster support disabled), every
// test skips itself: this cannot be checked there; it is checked against
// the proxy in front of a 3-master cluster (scripts/test.sh).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createCluster } = require('redis6');
const Redis6 = require('ioredis6');
const { REDIS_URL, KeyBook } = require('./lib/env');
const { keySlot, rangeOf } = require('./lib/slots');
const { clusterInfoError } = require('./lib/cluster-endpoint');
const { waitFor, parseClientInfo } = require('./lib/resp3');

const url = new URL(REDIS_URL);
const host = url.hostname;
const port = Number(url.port || 6379);
const CONNECT_MS = 10000;

let notCluster;
async function checkCluster() {
  if (notCluster === undefined) notCluster = await clusterInfoError(host, port, REDIS_URL);
}
function guard(t) {
  if (notCluster) {
    t.skip(`REDIS_URL (${REDIS_URL}) is not a cluster endpoint: ${notCluster}`);
    return false;
  }
  return true;
}

function bounded(promise, what, seen) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not ready after ${CONNECT_MS} ms` +
        (seen.error ? `; last error: ${seen.error.message}` : ''))), CONNECT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

function keysFor(book) {
  const spread = book.spread('s', 3);
  const ranges = new Set(spread.map((k) => rangeOf(keySlot(k))));
  assert.equal(ranges.size, 3, `keys ${spread} do not cover three masters`);
  const tag = `{${book.prefix}tag}`;
  return { spread, tagged: ['a', 'b', 'dst'].map((n) => book.key(`${tag}:${n}`)) };
}

describe('node-redis 6 createCluster (default options, RESP3) through the proxy', { timeout: 60000 }, () => {
  const book = new KeyBook('nr6cluster');
  let cluster;

  before(async () => {
    await checkCluster();
    if (notCluster) return;
    const c = createCluster({ rootNodes: [{ url: REDIS_URL }] });
    const seen = { error: null };
    c.on('error', (e) => { seen.error = e; });
    try {
      await bounded(c.connect(), 'node-redis 6 createCluster connect', seen);
    } catch (e) {
      try { c.destroy(); } catch { /* not open */ }
      throw e;
    }
    cluster = c;
  }, { timeout: 20000 });

  after(async () => {
    if (!cluster) return;
    await Promise.all(book.all().map((k) => cluster.del(k)));
    await cluster.close();
  });

  test('discovers the proxy as the one node owning every slot; RESP3', async (t) => {
    if (!guard(t)) return;
    assert.equal(cluster.masters.length, 1);
    assert.equal(cluster.masters[0].host, host);
    assert.equal(cluster.masters[0].port, port);
    assert.equal(cluster.getSlotRandomNode(16383).port, port);
    const node = await cluster.nodeClient(cluster.masters[0]);
    assert.equal((await node.clientInfo()).resp, 3);
  });

  test('SET, GET and MGET on keys of all three masters; HGETALL', async (t) => {
    if (!guard(t)) return;
    const { spread } = keysFor(book);
    for (const k of spread) assert.equal(await cluster.set(k, `v:${k}`), 'OK');
    for (const k of spread) assert.equal(await cluster.get(k), `v:${k}`);
    assert.deepEqual(await cluster.mGet(spread), spread.map((k) => `v:${k}`));
    const h = book.key('hash');
    await cluster.hSet(h, { a: '1', b: '2' });
    assert.deepEqual({ ...(await cluster.hGetAll(h)) }, { a: '1', b: '2' });
  });

  test('a multi-key command on one hash tag', async (t) => {
    if (!guard(t)) return;
    const [a, b, dst] = keysFor(book).tagged;
    assert.equal(await cluster.sAdd(a, ['x', 'y', 'z']), 3);
    assert.equal(await cluster.sAdd(b, ['y', 'z', 'w']), 3);
    assert.equal(await cluster.sInterStore(dst, [a, b]), 2);
    assert.deepEqual((await cluster.sMembers(dst)).sort(), ['y', 'z']);
  });

  test('pub/sub through the cluster client', async (t) => {
    if (!guard(t)) return;
    const ch = book.key('chan');
    const got = [];
    await cluster.subscribe(ch, (message, channel) => got.push([channel, message]));
    assert.equal(await cluster.publish(ch, 'hello'), 1);
    await waitFor(() => got.length === 1, 5000, 'the message');
    assert.deepEqual(got, [[ch, 'hello']]);
    await cluster.unsubscribe(ch);
  });
});

describe('ioredis 6 Redis.Cluster (default options) through the proxy', { timeout: 60000 }, () => {
  const book = new KeyBook('io6cluster');
  let cluster;

  before(async () => {
    await checkCluster();
    if (notCluster) return;
    const c = new Redis6.Cluster([{ host, port }]);
    const seen = { error: null };
    c.on('error', (e) => { seen.error = e; });
    try {
      await bounded(new Promise((resolve, reject) => {
        c.once('ready', resolve);
        c.once('end', () => reject(new Error('ioredis 6 cluster ended before ready')));
      }), 'ioredis 6 Redis.Cluster', seen);
    } catch (e) {
      c.disconnect();
      throw e;
    }
    cluster = c;
  }, { timeout: 20000 });

  after(async () => {
    if (!cluster) return;
    await Promise.all(book.all().map((k) => cluster.del(k)));
    await cluster.quit();
  });

  test('discovers the proxy as the one node owning every slot; RESP3', async (t) => {
    if (!guard(t)) return;
    const nodes = cluster.nodes('master');
    assert.equal(nodes.length, 1);
    assert.equal(nodes[0].options.port, port);
    assert.equal(parseClientInfo(await nodes[0].client('INFO')).resp, '3');
  });

  test('SET, GET and MGET on keys of all three masters; HGETALL', async (t) => {
    if (!guard(t)) return;
    const { spread } = keysFor(book);
    for (const k of spread) assert.equal(await cluster.set(k, `v:${k}`), 'OK');
    assert.deepEqual(await cluster.mget(...spread), spread.map((k) => `v:${k}`));
    const h = book.key('hash');
    await cluster.hset(h, 'a', '1', 'b', '2');
    assert.deepEqual(await cluster.hgetall(h), { a: '1', b: '2' });
    const [a, b] = keysFor(book).tagged;
    await cluster.sadd(a, 'x', 'y');
    await cluster.sadd(b, 'y');
    assert.deepEqual(await cluster.sinter(a, b), ['y']);
  });
});
