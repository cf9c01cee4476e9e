'use strict';
// BullMQ 5 as its documentation sets it up for a cluster, on the TCP port
// (REDIS_URL) and on the Unix socket (REDIS_UNIX_SOCKET): the `{bull}`
// prefix (every key of every queue in one slot), a Queue, a Worker with
// concurrency 5 and maxRetriesPerRequest: null, a QueueEvents; 300 jobs,
// some failing their first one or two attempts (attempts 3, exponential
// backoff), one delayed 500 ms.
//
// BullMQ 5 depends on ioredis 5 itself (RESP2) and has node-redis >= 5 as an
// optional peer, which conflicts with this suite's node-redis 4, so it is
// installed in lib/bullmq5 (a local package, `file:` dependency of the
// suite), as npm install bullmq@5 installs it in a project of its own.
//
// The queue adds the immediate jobs with addBulk (one MULTI/EXEC of script
// calls) and the delayed one with add; the worker takes jobs with BZPOPMIN
// on the marker key and EVALSHA of moveToActive, retries through
// moveToDelayed; the QueueEvents reads the events stream with XREAD BLOCK
// from its first entry, so it misses no event whenever its first read runs.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { bullmq } = require('./lib/bullmq5');
const { TARGETS, waitFor } = require('./lib/resp3');

const { Queue, Worker, QueueEvents } = bullmq;
const run = `${process.pid}-${Date.now().toString(36)}-${crypto.randomBytes(3).toString('hex')}`;
const PREFIX = '{bull}';
const JOBS = 300;
const CONCURRENCY = 5;
const DELAY_MS = 500;

function connectionFor(target) {
  if (target.path) return { path: target.path };
  const url = new URL(target.url);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

// How many attempts job n fails before it completes: every tenth job fails
// twice, every tenth from the fifth once, the others never.
function failuresOf(n) {
  if (n % 10 === 0) return 2;
  if (n % 10 === 5) return 1;
  return 0;
}

for (const target of TARGETS) {
  describe(`BullMQ 5 (prefix {bull}, ioredis 5) on the ${target.name}`,
    { timeout: 120000, skip: target.skip }, () => {
      const name = `tpe2e-bmq5-${target.path ? 'unix' : 'tcp'}-${run}`;
      const connection = connectionFor(target);
      let queue, worker, events;
      const completedEvents = new Map();
      const failedEvents = [];
      const exhausted = [];
      const workerFailures = [];
      const started = new Map(); // job id -> Date.now() of each attempt's start
      let active = 0;
      let maxActive = 0;

      before(async () => {
        queue = new Queue(name, { connection, prefix: PREFIX });
        queue.on('error', () => {});
        events = new QueueEvents(name, { connection, prefix: PREFIX, lastEventId: '0-0' });
        events.on('error', () => {});
        events.on('completed', ({ jobId, returnvalue }) => completedEvents.set(jobId, returnvalue));
        events.on('failed', ({ jobId, failedReason }) => failedEvents.push({ jobId, failedReason }));
        events.on('retries-exhausted', ({ jobId }) => exhausted.push(jobId));
        worker = new Worker(name, async (job) => {
          active++;
          maxActive = Math.max(maxActive, active);
          if (!started.has(job.id)) started.set(job.id, []);
          started.get(job.id).push(Date.now());
          try {
            await new Promise((r) => setTimeout(r, 2));
            if (job.name === 'later') return 'late';
            if (job.attemptsMade < job.data.fails) throw new Error(`attempt ${job.attemptsMade + 1} fails`);
            return job.data.n * 2;
          } finally {
            active--;
          }
        }, {
          connection: { ...connection, maxRetriesPerRequest: null },
          prefix: PREFIX,
          concurrency: CONCURRENCY,
        });
        worker.on('error', () => {});
        worker.on('failed', (job, err) => workerFailures.push({ id: job.id, reason: err.message }));
        await Promise.all([queue.waitUntilReady(), worker.waitUntilReady(), events.waitUntilReady()]);
      }, { timeout: 20000 });

      after(async () => {
        if (worker) await worker.close().catch(() => {});
        if (events) await events.close().catch(() => {});
        if (queue) {
          await queue.obliterate({ force: true }).catch(() => {});
          const client = await queue.client;
          // nothing of the queue is left
          assert.deepEqual(await client.keys(`${PREFIX}:${name}:*`), []);
          await queue.close().catch(() => {});
        }
      });

      test('300 jobs complete, retried ones with their attempts, the delayed one on time', async () => {
        const added = Date.now();
        const later = await queue.add('later', {}, { delay: DELAY_MS });
        assert.equal(await later.getState(), 'delayed');

        const specs = [];
        for (let n = 1; n < JOBS; n++) {
          specs.push({
            name: 'work',
            data: { n, fails: failuresOf(n) },
            opts: { attempts: 3, backoff: { type: 'exponential', delay: 20 } },
          });
        }
        const jobs = await queue.addBulk(specs);
        assert.equal(jobs.length, JOBS - 1);

        await waitFor(() => completedEvents.size === JOBS, 90000, `${JOBS} completed events`);

        // every job completed, with the right result and number of attempts
        const done = await queue.getJobs(['completed'], 0, -1);
        assert.equal(done.length, JOBS);
        const byId = new Map(done.map((j) => [j.id, j]));
        for (const j of jobs) {
          const now = byId.get(j.id);
          assert.ok(now, `job ${j.id} is not among the completed`);
          assert.equal(now.returnvalue, j.data.n * 2, `job ${j.id}'s result`);
          assert.equal(now.attemptsMade, j.data.fails + 1, `job ${j.id}'s attemptsMade`);
          assert.equal(started.get(j.id).length, j.data.fails + 1, `job ${j.id}'s attempts run`);
          assert.equal(completedEvents.get(j.id), j.data.n * 2);
        }

        // the delayed job ran once, not before its time
        const laterNow = byId.get(later.id);
        assert.equal(laterNow.returnvalue, 'late');
        assert.equal(laterNow.attemptsMade, 1);
        assert.equal(started.get(later.id).length, 1);
        assert.ok(started.get(later.id)[0] - added >= DELAY_MS,
          `the delayed job started ${started.get(later.id)[0] - added} ms after it was added`);
        assert.ok(laterNow.processedOn - laterNow.timestamp >= DELAY_MS);

        // each failed attempt reached the worker, and no job failed for good
        const expectFailures = jobs.reduce((s, j) => s + j.data.fails, 0);
        assert.equal(workerFailures.length, expectFailures);
        for (const f of workerFailures) assert.ok(jobs.find((j) => j.id === f.id).data.fails > 0);
        assert.deepEqual(failedEvents, []);
        assert.deepEqual(exhausted, []);

        assert.equal(maxActive, CONCURRENCY, `at most ${CONCURRENCY} jobs at once, and that many`);
        const counts = await queue.getJobCounts('completed', 'failed', 'delayed', 'wait', 'active', 'prioritized');
        assert.deepEqual(counts, { completed: JOBS, failed: 0, delayed: 0, wait: 0, active: 0, prioritized: 0 });
      });
    });
}
