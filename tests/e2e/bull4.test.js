'use strict';
// Bull 4 (the `bull` package, on ioredis 5, RESP2) as its documentation
// sets it up for a cluster, on the TCP port (REDIS_URL) and on the Unix
// socket (REDIS_UNIX_SOCKET): the `{bull}` prefix puts every key of a queue
// in one slot. Jobs are added and processed; Queue#empty() sends MULTI,
// LRANGE of its lists, KEYS {bull}:<queue>:* and DEL of its lists, then
// EXEC: the hash-tagged KEYS runs on the slot's master inside the
// transaction, in its place, and the writes after it run too. clean() and
// obliterate() run their scripts on the same slot.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const Bull = require('bull');
const { TARGETS, waitFor } = require('./lib/resp3');

const run = `${process.pid}-${Date.now().toString(36)}-${crypto.randomBytes(3).toString('hex')}`;
const PREFIX = '{bull}';
const JOBS = 50;

function redisFor(target) {
  if (target.path) return { path: target.path };
  const url = new URL(target.url);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

for (const target of TARGETS) {
  describe(`Bull 4 (prefix {bull}, ioredis 5) on the ${target.name}`,
    { timeout: 60000, skip: target.skip }, () => {
      const name = `tpe2e-bull4-${target.path ? 'unix' : 'tcp'}-${run}`;
      let queue;

      before(async () => {
        queue = new Bull(name, { redis: redisFor(target), prefix: PREFIX });
        queue.on('error', () => {});
        await queue.isReady();
      });

      after(async () => {
        if (!queue) return;
        await queue.obliterate({ force: true }).catch(() => {});
        const keys = await queue.client.keys(`${PREFIX}:${name}:*`);
        await queue.close().catch(() => {});
        assert.deepEqual(keys, [], 'obliterate left keys of the queue');
      });

      test(`${JOBS} jobs are processed, then clean() removes the completed`, async () => {
        const results = new Map();
        queue.on('completed', (job, value) => results.set(String(job.id), value));
        queue.process(3, async (job) => job.data.n * 3);
        const jobs = await Promise.all(
          Array.from({ length: JOBS }, (_, n) => queue.add({ n })));
        await waitFor(() => results.size === JOBS, 30000, `${JOBS} completed jobs`);
        for (const j of jobs) assert.equal(results.get(String(j.id)), j.data.n * 3);
        const counts = await queue.getJobCounts();
        assert.equal(counts.completed, JOBS);
        assert.equal(counts.waiting, 0);
        const removed = await queue.clean(0, 'completed');
        assert.equal(removed.length, JOBS);
        assert.equal(await queue.getCompletedCount(), 0);
      });

      test('Queue#empty() empties the waiting jobs in one transaction', async () => {
        await queue.pause(true);        // this worker takes no more jobs
        const waiting = await Promise.all(
          Array.from({ length: 10 }, (_, n) => queue.add({ n }, { removeOnComplete: true })));
        assert.equal(await queue.getWaitingCount(), 10);
        await queue.empty();
        assert.equal(await queue.getWaitingCount(), 0);
        for (const j of waiting) assert.equal(await queue.getJob(j.id), null, `job ${j.id} left`);
        await queue.resume(true);
      });
    });
}
