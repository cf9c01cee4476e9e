'use strict';
// Helpers for the RESP3 end-to-end tests (node-redis 6, ioredis 6, BullMQ 6):
// where to connect, and how to connect with each client's DEFAULT options.
//
// "Default" means what a new user writes: createClient({ url }) or
// createClient({ socket: { path } }) for node-redis 6, new Redis(url) or
// new Redis({ path }) for ioredis 6. No protocol / RESP option, no retry
// option, no client name. Both clients then retry a failed handshake for
// ever (node-redis 6 on -NOPROTO; ioredis 6 only on errors other than
// NOPROTO, on which it falls back to RESP2), so the helpers bound the
// connect with a timer, destroy a client that did not get ready, and fail
// with the last error the client reported: a test that cannot connect fails
// in seconds and says why, instead of hanging until the suite's timeout.

const { REDIS_URL } = require('./env');

const SOCKET = process.env.REDIS_UNIX_SOCKET;
const CONNECT_MS = 10000;

// The two ways to reach the server under test: the TCP port (REDIS_URL) and
// the Unix socket (REDIS_UNIX_SOCKET; scripts/test.sh passes the proxy's
// unixsocket). `skip` is for describe(): the socket suite is skipped, with
// the reason, where no socket is given.
const TARGETS = [
  { name: 'TCP', url: REDIS_URL, skip: false },
  { name: 'Unix socket', path: SOCKET, skip: !SOCKET && 'REDIS_UNIX_SOCKET is not set' },
];

function lastErrorTracker(emitter) {
  const seen = { error: null };
  emitter.on('error', (e) => { seen.error = e; });
  return seen;
}

function withTimeout(promise, ms, what, seen) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const why = seen.error ? `; last error: ${seen.error.message}` : '';
      reject(new Error(`${what}: not ready after ${ms} ms${why}`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// node-redis 6 with its defaults (RESP3: HELLO 3 on connect).
async function nodeRedis6(target) {
  const { createClient } = require('redis6');
  const c = target.path ? createClient({ socket: { path: target.path } }) : createClient({ url: target.url });
  const seen = lastErrorTracker(c);
  try {
    await withTimeout(c.connect(), CONNECT_MS, `node-redis 6 connect to ${target.path || target.url}`, seen);
  } catch (e) {
    try { c.destroy(); } catch { /* not open */ }
    throw e;
  }
  return c;
}

// A second node-redis 6 connection like the first (c.duplicate() keeps the
// first one's options, which are the defaults).
async function duplicate6(c) {
  const d = c.duplicate();
  const seen = lastErrorTracker(d);
  try {
    await withTimeout(d.connect(), CONNECT_MS, 'node-redis 6 duplicate connect', seen);
  } catch (e) {
    try { d.destroy(); } catch { /* not open */ }
    throw e;
  }
  return d;
}

// ioredis 6 with its defaults (protocol: 3, replyMapping: "legacy").
async function ioredis6(target) {
  const Redis = require('ioredis6');
  const r = target.path ? new Redis({ path: target.path }) : new Redis(target.url);
  const seen = lastErrorTracker(r);
  const ready = new Promise((resolve, reject) => {
    if (r.status === 'ready') return resolve();
    r.once('ready', resolve);
    r.once('end', () => reject(new Error('ioredis 6 connection ended')));
  });
  try {
    await withTimeout(ready, CONNECT_MS, `ioredis 6 connect to ${target.path || target.url}`, seen);
  } catch (e) {
    r.disconnect();
    throw e;
  }
  return r;
}

// Closes a node-redis 6 or ioredis 6 client whatever state it is in.
async function close(c) {
  if (!c) return;
  try {
    if (typeof c.quit === 'function' && (c.isOpen === undefined || c.isOpen)) await c.quit();
  } catch {
    try { c.destroy ? c.destroy() : c.disconnect(); } catch { /* gone */ }
  }
}

// Resolves once check() is true, polling; rejects after ms.
async function waitFor(check, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// CLIENT INFO's text as a field map (resp, flags, addr, ...).
function parseClientInfo(text) {
  const out = {};
  for (const part of String(text).trim().split(' ')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

module.exports = { TARGETS, SOCKET, nodeRedis6, duplicate6, ioredis6, close, waitFor, parseClientInfo };
