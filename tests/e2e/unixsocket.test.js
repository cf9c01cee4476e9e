'use strict';
// node-redis 4 and ioredis 5 on the proxy's Unix socket (`unixsocket`):
// REDIS_UNIX_SOCKET is its path (scripts/test.sh starts the proxy with one).
// Strings, a pipeline and multi-key commands over keys on all three masters,
// and CLIENT INFO's U flag, as a redis-server on a Unix socket shows it.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient } = require('redis');
const Redis = require('ioredis');
const { KeyBook } = require('./lib/env');

const SOCKET = process.env.REDIS_UNIX_SOCKET;

// The same tests for each library: connect() gives a client, call(c, argv)
// runs one command on it.
function suite(lib, connect, call) {
  describe(`${lib} on the Unix socket`, { timeout: 60000, skip: !SOCKET && 'REDIS_UNIX_SOCKET is not set' }, () => {
    const book = new KeyBook(`${lib}-unix`);
    let c;

    before(async () => {
      c = await connect();
    });

    after(async () => {
      if (!c) return;
      await Promise.all(book.all().map((k) => call(c, ['DEL', k])));
      await c.quit();
    });

    test('CLIENT INFO names the socket and says U', async () => {
      const info = await call(c, ['CLIENT', 'INFO']);
      assert.match(info, new RegExp(` addr=${SOCKET.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:0 `));
      assert.match(info, / flags=U /);
    });

    test('strings, a pipeline and multi-key commands on every master', async () => {
      const keys = book.spread('k', 3);          // 3 keys on each master
      for (const [i, k] of keys.entries()) assert.equal(await call(c, ['SET', k, `v${i}`]), 'OK');
      assert.deepEqual(await call(c, ['MGET', ...keys]), keys.map((_, i) => `v${i}`));
      const counter = book.key('counter');
      const replies = await Promise.all(
        Array.from({ length: 200 }, () => call(c, ['INCR', counter])));
      assert.deepEqual(replies, Array.from({ length: 200 }, (_, i) => i + 1));
      assert.equal(await call(c, ['DEL', ...keys]), keys.length);
      assert.equal(await call(c, ['EXISTS', ...keys]), 0);
    });
  });
}

suite('node-redis', async () => {
  const c = createClient({ socket: { path: SOCKET, reconnectStrategy: false, connectTimeout: 5000 } });
  c.on('error', () => {});
  await c.connect();
  return c;
}, (c, argv) => c.sendCommand(argv));

suite('ioredis', async () => {
  const r = new Redis({ path: SOCKET, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  await r.connect();
  return r;
}, (r, argv) => r.call(...argv));
