'use strict';
// BullMQ 6 with its default options, on the TCP port (REDIS_URL) and on the
// Unix socket (REDIS_UNIX_SOCKET): a queue, a worker, jobs that complete, a
// job that fails once and is retried (attempts: 2), a delayed job (300 ms).
//
// BullMQ 6 has no Redis client of its own: `ioredis` (>= 5) is an optional
// peer dependency, loaded with require('ioredis') when `connection` is
// given as options. A new project installs `bullmq ioredis` and so gets
// ioredis 6; this suite's own `ioredis` is 5, so BullMQ is installed in
// lib/bullmq6 (a local package, `file:` dependency of the suite) beside
// ioredis 6, and require('ioredis') from BullMQ finds ioredis 6 there.
// The first test checks that it does.
//
// What BullMQ 6.7.0 sends on its connections (on the wire, against
// redis-server 7.0): each connection opens like ioredis 6 (hello 3,
// client SETINFO LIB-VER 6.0.0, client SETINFO LIB-NAME ioredis, pipelined),
// the worker's blocking connection with `client setname bull:<base64 of
// the queue name>` between HELLO and SETINFO; then `info` twice (ioredis's
// ready check and BullMQ's version check); then EVAL / EVALSHA of its Lua
// scripts, `bzpopmin bull:<queue>:marker <timeout as a double>`, HSET ...
//
// Queue names carry a hash tag ({...}) so that all of a queue's keys lie in
// one slot, as BullMQ requires on a cluster (its scripts touch many keys).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const path = require('node:path');
const { bullmq, ioredis: BullIORedis } = require('./lib/bullmq6');
const { TARGETS, ioredis6, close, waitFor, parseClientInfo } = require('./lib/resp3');

const { Queue, Worker } = bullmq;
const run = `${process.pid}-${Date.now().toString(36)}-${crypto.randomBytes(3).toString('hex')}`;

function connectionFor(target) {
  if (target.path) return { path: target.path };
  const url = new URL(target.url);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

for (const target of TARGETS) {
  describe(`BullMQ 6 (default options, ioredis 6) on the ${target.name}`,
    { timeout: 60000, skip: target.skip }, () => {
      const name = `{tpe2e-bmq-${target.path ? 'unix' : 'tcp'}-${run}}`;
      const connection = connectionFor(target);
      let queue, worker, probe;
      const completed = new Map();
      const failed = [];

      before(async () => {
        queue = new Queue(name, { connection });
        queue.on('error', () => {});
        worker = new Worker(name, async (job) => {
          if (job.name === 'flaky' && job.attemptsMade === 0) throw new Error('first try fails');
          if (job.name === 'flaky') return 'second try';
          if (job.name === 'later') return 'late';
          return job.data.n * 2;
        }, { connection });
        worker.on('error', () => {});
        worker.on('completed', (job, result) => completed.set(job.id, { job, result }));
        worker.on('failed', (job, err) => failed.push({ id: job.id, reason: err.message }));
        await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
      }, { timeout: 20000 });

      after(async () => {
        if (worker) await worker.close().catch(() => {});
        if (queue) {
          await queue.obliterate({ force: true }).catch(() => {});
          await queue.close().catch(() => {});
        }
        if (probe) {
          // nothing of the queue is left
          assert.equal(await probe.exists(`bull:${name}:meta`, `bull:${name}:id`, `bull:${name}:events`), 0);
          await close(probe);
        }
      });

      test('BullMQ uses ioredis 6, in RESP3', async () => {
        // require('ioredis') from BullMQ's own folder: ioredis 6 (BullIORedis)
        const bullDir = path.dirname(require.resolve('bullmq/package.json', { paths: [path.join(__dirname, 'lib/bullmq6')] }));
        const ioPkg = require.resolve('ioredis/package.json', { paths: [bullDir] });
        assert.match(require(ioPkg).version, /^6\./, `BullMQ loads ${ioPkg}`);
        assert.equal(require(require.resolve('ioredis', { paths: [bullDir] })), BullIORedis);
        // the backend's client is BullMQ's Proxy around the ioredis instance
        for (const owner of [queue, worker]) {
          const client = await owner.getBackend().client;
          const info = parseClientInfo(await client.client('INFO'));
          assert.equal(info.resp, '3', 'BullMQ\'s connection is not RESP3 (ioredis fell back to RESP2?)');
        }
      });

      test('jobs complete; a failing job is retried; a delayed job waits', async () => {
        probe = await ioredis6(target);
        const jobs = [];
        for (let n = 1; n <= 3; n++) jobs.push(await queue.add('ok', { n }));
        const flaky = await queue.add('flaky', {}, { attempts: 2 });
        const added = Date.now();
        const later = await queue.add('later', {}, { delay: 300 });
        assert.equal(await later.getState(), 'delayed');

        await waitFor(() => completed.size === 5, 20000, 'five completed jobs');
        for (const [i, j] of jobs.entries()) assert.equal(completed.get(j.id).result, (i + 1) * 2);

        assert.equal(completed.get(flaky.id).result, 'second try');
        assert.deepEqual(failed, [{ id: flaky.id, reason: 'first try fails' }]);
        const flakyNow = await queue.getJob(flaky.id);
        assert.equal(flakyNow.attemptsMade, 2);
        assert.equal(flakyNow.returnvalue, 'second try');
        assert.equal(await flakyNow.getState(), 'completed');

        const laterNow = await queue.getJob(later.id);
        assert.equal(laterNow.returnvalue, 'late');
        assert.ok(laterNow.processedOn - laterNow.timestamp >= 300,
          `the delayed job ran ${laterNow.processedOn - laterNow.timestamp} ms after it was added`);
        assert.ok(Date.now() - added >= 300);

        const counts = await queue.getJobCounts('completed', 'failed', 'delayed', 'wait', 'active');
        assert.deepEqual(counts, { completed: 5, failed: 0, delayed: 0, wait: 0, active: 0 });
      });
    });
}
