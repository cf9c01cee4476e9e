'use strict';
// Cluster-mode clients through the proxy: ioredis 5 `Redis.Cluster` and
// node-redis 4 `createCluster`, seeded with REDIS_URL only. The proxy
// presents itself as a one-node cluster that owns every slot (CLUSTER SLOTS
// names the proxy's own address), so these clients send everything to the
// proxy, which routes it to the three real masters. Checked: the clients'
// slot discovery, SET/GET/MGET on keys of all three masters, and a multi-key
// command on one hash tag.
//
// When REDIS_URL is a plain redis-server (CLUSTER INFO fails: cluster
// support disabled), the suite is skipped: a cluster client cannot work
// there and that says nothing about the proxy.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { createCluster } = require('redis');
const { REDIS_URL, KeyBook } = require('./lib/env');
const { keySlot, rangeOf } = require('./lib/slots');
const { clusterInfoError } = require('./lib/cluster-endpoint');

const url = new URL(REDIS_URL);
const host = url.hostname;
const port = Number(url.port || 6379);

// Why REDIS_URL is no cluster endpoint (null: it is one). The file is
// CommonJS, without top-level await, so the first `before` finds out and each
// test skips itself through `guard`.
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

// Three keys per master range, a hash-tagged pair, and their values.
function keysFor(book) {
  const spread = book.spread('s', 3);
  const tag = `{${book.prefix}tag}`;
  return {
    spread,
    tagged: ['a', 'b', 'dst', 'moved'].map((n) => book.key(`${tag}:${n}`)),
  };
}

function checkSpread(spread) {
  // the keys really lie in all three ranges of a 3-master cluster
  const ranges = new Set(spread.map((k) => rangeOf(keySlot(k))));
  assert.equal(ranges.size, 3, `keys ${spread} do not cover three masters`);
}

describe('ioredis 5 Redis.Cluster through the proxy', { timeout: 60000 }, () => {
  const book = new KeyBook('iocluster');
  let cluster;

  before(async () => {
    await checkCluster();
    if (notCluster) return;
    cluster = new Redis.Cluster([{ host, port }], {
      enableReadyCheck: true,
      slotsRefreshTimeout: 5000,
      clusterRetryStrategy: () => null,
      redisOptions: { connectTimeout: 5000, maxRetriesPerRequest: 0 },
    });
    cluster.on('error', () => {}); // failures surface as rejected commands
    await new Promise((resolve, reject) => {
      cluster.once('ready', resolve);
      cluster.once('end', () => reject(new Error('ioredis cluster ended before ready')));
    });
  });

  after(async () => {
    if (!cluster) return;
    await Promise.all(book.all().map((k) => cluster.del(k)));
    await cluster.quit();
  });

  test('discovers the proxy as the one node owning every slot', (t) => {
    if (!guard(t)) return;
    const nodes = cluster.nodes('master');
    assert.equal(nodes.length, 1);
    assert.equal(nodes[0].options.host, host);
    assert.equal(nodes[0].options.port, port);
  });

  test('SET, GET and MGET on keys of all three masters', async (t) => {
    if (!guard(t)) return;
    const { spread } = keysFor(book);
    checkSpread(spread);
    for (const k of spread) assert.equal(await cluster.set(k, `v:${k}`), 'OK');
    for (const k of spread) assert.equal(await cluster.get(k), `v:${k}`);
    // ioredis would refuse a cross-slot MGET itself unless all slots share
    // a node: here they do (the proxy), so it goes out as one command
    assert.deepEqual(await cluster.mget(...spread), spread.map((k) => `v:${k}`));
    const missing = book.key('missing');
    assert.deepEqual(await cluster.mget(spread[0], missing, spread[1]),
      [`v:${spread[0]}`, null, `v:${spread[1]}`]);
  });

  test('a multi-key command on one hash tag', async (t) => {
    if (!guard(t)) return;
    const [a, b, dst, moved] = keysFor(book).tagged;
    assert.equal(await cluster.sadd(a, 'x', 'y', 'z'), 3);
    assert.equal(await cluster.sadd(b, 'y', 'z', 'w'), 3);
    assert.equal(await cluster.sinterstore(dst, a, b), 2);
    assert.deepEqual((await cluster.smembers(dst)).sort(), ['y', 'z']);
    assert.equal(await cluster.rename(dst, moved), 'OK');
    assert.equal(await cluster.scard(moved), 2);
    assert.deepEqual((await cluster.sunion(a, b)).sort(), ['w', 'x', 'y', 'z']);
  });
});

describe('node-redis 4 createCluster through the proxy', { timeout: 60000 }, () => {
  const book = new KeyBook('nrcluster');
  let cluster;

  before(async () => {
    await checkCluster();
    if (notCluster) return;
    cluster = createCluster({
      rootNodes: [{ url: REDIS_URL }],
      defaults: { socket: { connectTimeout: 5000, reconnectStrategy: false } },
    });
    cluster.on('error', () => {});
    await cluster.connect();
  });

  after(async () => {
    if (!cluster) return;
    await Promise.all(book.all().map((k) => cluster.del(k)));
    await cluster.quit();
  });

  test('discovers the proxy as the one node owning every slot', (t) => {
    if (!guard(t)) return;
    assert.equal(cluster.masters.length, 1);
    assert.equal(cluster.masters[0].host, host);
    assert.equal(cluster.masters[0].port, port);
    assert.equal(cluster.getSlotRandomNode(0).port, port);
  });

  test('SET, GET and MGET on keys of all three masters', async (t) => {
    if (!guard(t)) return;
    const { spread } = keysFor(book);
    checkSpread(spread);
    for (const k of spread) assert.equal(await cluster.set(k, `v:${k}`), 'OK');
    for (const k of spread) assert.equal(await cluster.get(k), `v:${k}`);
    // node-redis sends MGET to the first key's slot owner: the proxy
    assert.deepEqual(await cluster.mGet(spread), spread.map((k) => `v:${k}`));
    const missing = book.key('missing');
    assert.deepEqual(await cluster.mGet([spread[2], missing]), [`v:${spread[2]}`, null]);
  });

  test('a multi-key command on one hash tag', async (t) => {
    if (!guard(t)) return;
    const [a, b, dst, moved] = keysFor(book).tagged;
    assert.equal(await cluster.sAdd(a, ['x', 'y', 'z']), 3);
    assert.equal(await cluster.sAdd(b, ['y', 'z', 'w']), 3);
    assert.equal(await cluster.sInterStore(dst, [a, b]), 2);
    assert.deepEqual((await cluster.sMembers(dst)).sort(), ['y', 'z']);
    assert.equal(await cluster.rename(dst, moved), 'OK');
    assert.equal(await cluster.exists(dst), 0);
    assert.deepEqual((await cluster.sUnion([a, b])).sort(), ['w', 'x', 'y', 'z']);
  });
});
