'use strict';
// node-redis 6 with its client-side cache (`clientSideCache`, RESP3: it
// sends CLIENT TRACKING ON at connect), through the proxy, on the TCP port
// and on the Unix socket. Checked: it connects (the proxy used to refuse
// CLIENT TRACKING ON); a second GET of a key is a hit of its cache (its
// stats count it); a write by another client (plain node-redis 6, on the
// proxy) invalidates the entry, so the next GET reads the new value from
// the cluster, never the cached one; keys on each of the three masters and
// an MGET over them the same; and a key written where the reader did not
// read it leaves the cache alone.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { KeyBook } = require('./lib/env');
const { TARGETS, nodeRedis6, close, waitFor } = require('./lib/resp3');

async function cachingClient(target) {
  const { createClient } = require('redis6');
  const opts = { clientSideCache: { ttl: 0, maxEntries: 0 } };
  const c = target.path ? createClient({ ...opts, socket: { path: target.path } })
    : createClient({ ...opts, url: target.url });
  c.on('error', () => { /* reported by the failing call */ });
  await c.connect();
  return c;
}

for (const target of TARGETS) {
  describe(`node-redis 6 clientSideCache on the ${target.name}`,
    { timeout: 60000, skip: target.skip }, () => {
      const book = new KeyBook(`csc-${target.path ? 'unix' : 'tcp'}`);
      let reader, writer;

      before(async () => {
        reader = await cachingClient(target);
        writer = await nodeRedis6(target);
      }, { timeout: 20000 });

      after(async () => {
        if (writer && writer.isReady) await Promise.all(book.all().map((k) => writer.del(k)));
        await close(reader);
        await close(writer);
      });

      test('a repeated GET is served from the cache, and a write invalidates it', async () => {
        const cache = reader.clientSideCache;
        for (let r = 0; r < 3; r++) {
          const key = book.keyIn(`k${r}`, r);
          await writer.set(key, 'one');
          assert.equal(await reader.get(key), 'one');
          const hits = cache.stats().hitCount;
          assert.equal(await reader.get(key), 'one');
          assert.equal(cache.stats().hitCount, hits + 1, 'the second GET was not a hit');
          await writer.set(key, 'two');
          // the invalidation arrives: the cached 'one' is never served again
          await waitFor(async () => (await reader.get(key)) === 'two', 5000,
            `the invalidation of ${key}`);
          const hits2 = cache.stats().hitCount;
          assert.equal(await reader.get(key), 'two');
          assert.equal(cache.stats().hitCount, hits2 + 1, 'not cached again after it');
        }
      });

      test('MGET over three masters: each key invalidated on its own', async () => {
        const keys = [0, 1, 2].map((r) => book.keyIn(`m${r}`, r));
        await Promise.all(keys.map((k) => writer.set(k, 'a')));
        assert.deepEqual(await reader.mGet(keys), ['a', 'a', 'a']);
        const hits = reader.clientSideCache.stats().hitCount;
        assert.deepEqual(await reader.mGet(keys), ['a', 'a', 'a']);
        assert.equal(reader.clientSideCache.stats().hitCount, hits + 1);
        await writer.set(keys[1], 'b');
        await waitFor(async () => (await reader.mGet(keys))[1] === 'b', 5000,
          'the invalidation of the MGET');
        assert.deepEqual(await reader.mGet(keys), ['a', 'b', 'a']);
      });

      test('a key it did not read leaves its cache alone', async () => {
        const read = book.keyIn('read', 0), other = book.keyIn('other', 0);
        await writer.set(read, 'r');
        assert.equal(await reader.get(read), 'r');
        await writer.set(other, 'o');
        assert.equal(await writer.get(other), 'o');
        const hits = reader.clientSideCache.stats().hitCount;
        assert.equal(await reader.get(read), 'r');
        assert.equal(reader.clientSideCache.stats().hitCount, hits + 1);
      });
    });
}
