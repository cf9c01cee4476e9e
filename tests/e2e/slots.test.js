'use strict';
// The CRC16/hash-slot helper the other tests use to spread keys over the
// three masters. Vectors from the Redis Cluster spec and from a real
// redis-server 7.0's CLUSTER KEYSLOT.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { createClient } = require('redis');
const { crc16, keySlot, rangeOf, spreadKeys } = require('./lib/slots');
const { REDIS_URL } = require('./lib/env');

const SLOT_VECTORS = [
  ['foo', 12182],
  ['bar', 5061],
  ['123456789', 12739],
  ['{user1000}.following', 3443],
  ['user1000', 3443],
  ['{}foo', 9500],          // empty tag: the whole key is hashed
  ['foo{}{bar}', 8363],     // first '{' then first '}': empty, whole key
  ['foo{{bar}}zap', 4015],  // tag is "{bar"
  ['foo{bar}{zap}', 5061],  // only the first tag counts
  ['', 0],
];

test('crc16 check value', () => {
  assert.equal(crc16('123456789'), 0x31c3);
});

test('keySlot vectors', () => {
  for (const [key, slot] of SLOT_VECTORS) assert.equal(keySlot(key), slot, key);
});

test('spreadKeys lands round-robin on the three ranges', () => {
  const keys = spreadKeys('x', 2);
  assert.deepEqual(keys.map((k) => rangeOf(keySlot(k))), [0, 1, 2, 0, 2, 1]);
  assert.equal(new Set(keys).size, keys.length);
});

// Through the proxy CLUSTER KEYSLOT is answered (it poses as a one-node
// cluster); a standalone redis-server without cluster support refuses it.
test('keySlot agrees with the target\'s CLUSTER KEYSLOT', async (t) => {
  const client = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  try {
    let first;
    try {
      first = await client.sendCommand(['CLUSTER', 'KEYSLOT', 'foo']);
    } catch (err) {
      t.skip(`target has no CLUSTER KEYSLOT: ${err.message}`);
      return;
    }
    assert.equal(first, 12182);
    const replies = await Promise.all(
      SLOT_VECTORS.map(([key]) => client.sendCommand(['CLUSTER', 'KEYSLOT', key])));
    assert.deepEqual(replies, SLOT_VECTORS.map(([, slot]) => slot));
  } finally {
    await client.quit();
  }
});
