/**
 * The contract between Baton and BullMQ's internals (this folder), on a real queue: the key
 * layout, the job lock and its token, the job hash with Baton's fields in it, the marker, the
 * stall reason, the client behind a queue, and the classes worker-backend.ts builds on. An
 * upgrade that changes any of them fails here, at the seam, instead of as a run that stands still.
 * (worker-backend.ts's cluster path is exercised end to end by the cluster project:
 * test/cluster/cluster-failover.test.ts and cluster-idle-cost.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  Job,
  Queue,
  QueueKeys,
  RedisQueueBackend,
  Worker,
  createRedisBackend,
  type JobsOptions,
} from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { bullClientOf, coalesceBullWrites } from './clients.ts';
import {
  BULL_STALLS_FIELD,
  JOB_DEATHS_FIELD,
  JOB_HOLDER_FIELD,
  JOB_STALLS_FIELD,
  STALLED_TOO_OFTEN,
} from './job-hash.ts';
import { isWorkerLockToken, jobLockKey, readJobLock } from './job-lock.ts';
import {
  PENDING_STATES,
  activeJobsKey,
  failedJobsKey,
  jobHashKey,
  jobHashKeyOf,
  pendingJobKeys,
  queueMarkerKey,
  queueSlotKey,
  wakeQueue,
} from './queue-keys.ts';
import { workerBackend } from './worker-backend.ts';

const LOCK_MS = 10_000;
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `bullmq-contract-${randomUUID().slice(0, 8)}`;
const closing: { close(): Promise<unknown> }[] = [];

afterAll(async () => {
  await Promise.all(closing.map((c) => c.close()));
  redis.disconnect();
});

function queueNamed(name: string): Queue {
  const queue = new Queue(name, { connection: redis, prefix });
  closing.push(queue);
  return queue;
}

/** A Worker that fetches by hand (no processor loop, no lock renewal). */
function manualWorker(name: string, opts: { maxStalledCount?: number } = {}): Worker {
  const worker = new Worker(name, null, {
    connection: redis,
    prefix,
    lockDuration: LOCK_MS,
    stalledInterval: 50,
    ...opts,
  });
  closing.push(worker);
  return worker;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 10));
}

/** Which of `keys` hold `id` (lists, sorted sets; the waiting-children set). */
async function holding(keys: readonly string[], id: string): Promise<string[]> {
  const found: string[] = [];
  for (const key of keys) {
    const type = await redis.type(key);
    if (type === 'list' && (await redis.lpos(key, id)) !== null) found.push(key);
    if (type === 'zset' && (await redis.zscore(key, id)) !== null) found.push(key);
  }
  return found;
}

describe('BullMQ key layout (queue-keys.ts)', () => {
  it('keys a queue as <prefix>:<queue>:<type> and a job hash as <prefix>:<queue>:<id>', async () => {
    const queue = queueNamed('layout');
    const job = await queue.add('j', { runId: 'r1' });
    const id = job.id ?? '';
    expect(jobHashKey(queue, id)).toBe(`${prefix}:layout:${id}`);
    expect(job.queueQualifiedName).toBe(`${prefix}:layout`);
    expect(jobHashKeyOf(job)).toBe(jobHashKey(queue, id));
    expect(await redis.type(jobHashKey(queue, id))).toBe('hash');
    expect(JSON.parse((await redis.hget(jobHashKey(queue, id), 'data')) ?? '')).toEqual({
      runId: 'r1',
    });
    expect(queueSlotKey(queue)).toBe(`${prefix}:layout:wait`);
    expect(activeJobsKey(queue)).toBe(`${prefix}:layout:active`);
    expect(failedJobsKey(queue)).toBe(`${prefix}:layout:failed`);
    expect(new QueueKeys(prefix).toKey('layout', 'marker')).toBe(queueMarkerKey(queue));
  });

  it('keeps every job still to be done in one of PENDING_STATES, and a finished one in none', async () => {
    const queue = queueNamed('pending');
    const worker = manualWorker('pending');
    const pending = pendingJobKeys(queue);
    expect(pending).toEqual(PENDING_STATES.map((s) => `${prefix}:pending:${s}`));
    const add = async (name: string, opts: JobsOptions = {}): Promise<string> =>
      (await queue.add(name, {}, opts)).id ?? '';
    const waiting = await add('waiting');
    const prioritized = await add('prioritized', { priority: 3 });
    const delayed = await add('delayed', { delay: 60_000 });
    const flow = await queue.add('parent', {});
    await queue.add('child', {}, { parent: { id: flow.id ?? '', queue: flow.queueQualifiedName } });
    expect(await holding(pending, waiting)).toEqual([`${prefix}:pending:wait`]);
    expect(await holding(pending, prioritized)).toEqual([`${prefix}:pending:prioritized`]);
    expect(await holding(pending, delayed)).toEqual([`${prefix}:pending:delayed`]);

    const token = `${worker.id}:1`;
    const active = await worker.getNextJob(token);
    if (!active?.id) throw new Error('nothing fetched');
    expect(await holding(pending, active.id)).toEqual([activeJobsKey(queue)]);
    // The worker's lock: <job hash>:lock holding its token, the lock duration as its TTL.
    expect(jobLockKey(queue, active.id)).toBe(`${jobHashKey(queue, active.id)}:lock`);
    const lock = await readJobLock(redis, queue, active.id);
    expect(lock?.token).toBe(token);
    expect(lock?.ttlMs).toBeGreaterThan(LOCK_MS - 2_000);
    expect(lock?.ttlMs).toBeLessThanOrEqual(LOCK_MS);

    // A parent waiting for its children (the fan-out's step job).
    await queue.add('p2', {}, {});
    const parentFetched = await worker.getNextJob(`${worker.id}:2`);
    if (!parentFetched?.id) throw new Error('no parent fetched');
    await queue.add(
      'c2',
      {},
      { parent: { id: parentFetched.id, queue: parentFetched.queueQualifiedName } },
    );
    expect(await parentFetched.moveToWaitingChildren(`${worker.id}:2`)).toBe(true);
    expect(await holding(pending, parentFetched.id)).toEqual([
      `${prefix}:pending:waiting-children`,
    ]);

    // Failed: out of every pending state, in `failed` scored by when it failed.
    await active.moveToFailed(new Error('boom'), token, false);
    expect(await holding(pending, active.id)).toEqual([]);
    const failed = await Job.fromId(queue, active.id);
    expect(Number(await redis.zscore(failedJobsKey(queue), active.id))).toBe(failed?.finishedOn);
    expect(await redis.exists(...pending)).toBeGreaterThan(0);
  });

  it('sets the marker as adding a job does (BullMQ: ZADD marker 0 "0")', async () => {
    const queue = queueNamed('marker');
    await queue.add('j', {});
    expect(await redis.zrange(queueMarkerKey(queue), '0', '-1', 'WITHSCORES')).toEqual(['0', '0']);
    await redis.del(queueMarkerKey(queue));
    await wakeQueue(redis, queue);
    expect(await redis.zrange(queueMarkerKey(queue), '0', '-1', 'WITHSCORES')).toEqual(['0', '0']);
  });
});

describe('BullMQ job locks (job-lock.ts)', () => {
  it("makes a Worker's own tokens <worker id>:<n>", async () => {
    const queue = queueNamed('tokens');
    const tokens: string[] = [];
    const worker = new Worker(
      'tokens',
      async (_job, token) => {
        tokens.push(token ?? '');
      },
      { connection: redis, prefix },
    );
    closing.push(worker);
    await queue.add('j', {});
    await until(async () => tokens.length > 0);
    await worker.close();
    expect(isWorkerLockToken(tokens[0] ?? '', worker.id)).toBe(true);
    expect(tokens[0]).toMatch(new RegExp(`^${worker.id}:\\d+$`));
    expect(isWorkerLockToken(tokens[0] ?? '', `${worker.id}x`)).toBe(false);
  });
});

describe('BullMQ job hash with Baton fields (job-hash.ts)', () => {
  it('keeps Baton fields through a stall, and counts the stall in stc', async () => {
    const queue = queueNamed('stalls');
    const worker = manualWorker('stalls', { maxStalledCount: 5 });
    await queue.add('j', {});
    const job = await worker.getNextJob(`${worker.id}:1`);
    if (!job?.id) throw new Error('nothing fetched');
    const key = jobHashKeyOf(job);
    await redis.hset(key, JOB_STALLS_FIELD, 0, JOB_HOLDER_FIELD, 'w1', JOB_DEATHS_FIELD, 2);
    // The worker "died": its lock is gone; the stall check puts the job back.
    await redis.del(jobLockKey(queue, job.id));
    await worker.startStalledCheckTimer();
    await until(async () => (await queue.getJobState(job.id ?? '')) === 'waiting');
    expect(await redis.hget(key, BULL_STALLS_FIELD)).toBe('1');
    expect((await Job.fromId(queue, job.id))?.stalledCounter).toBe(1);
    expect(await redis.hmget(key, JOB_STALLS_FIELD, JOB_HOLDER_FIELD, JOB_DEATHS_FIELD)).toEqual([
      '0',
      'w1',
      '2',
    ]);
  });

  it('keeps Baton fields through a retry and a delay', async () => {
    const queue = queueNamed('moves');
    const worker = manualWorker('moves');
    await queue.add('j', {}, { attempts: 3 });
    const token = `${worker.id}:1`;
    const job = await worker.getNextJob(token);
    if (!job?.id) throw new Error('nothing fetched');
    await redis.hset(jobHashKeyOf(job), JOB_HOLDER_FIELD, 'w1');
    await job.moveToFailed(new Error('retry me'), token, false);
    expect(await queue.getJobState(job.id)).toBe('waiting');
    const again = await worker.getNextJob(`${worker.id}:2`);
    expect(again?.id).toBe(job.id);
    await again?.moveToDelayed(Date.now() + 60_000, `${worker.id}:2`);
    expect(await queue.getJobState(job.id)).toBe('delayed');
    expect(await redis.hget(jobHashKeyOf(job), JOB_HOLDER_FIELD)).toBe('w1');
  });

  it('fails a job stalled more than maxStalledCount with STALLED_TOO_OFTEN', async () => {
    const queue = queueNamed('given-up');
    const worker = manualWorker('given-up', { maxStalledCount: 0 });
    await queue.add('j', {});
    const job = await worker.getNextJob(`${worker.id}:1`);
    if (!job?.id) throw new Error('nothing fetched');
    await redis.del(jobLockKey(queue, job.id));
    await worker.startStalledCheckTimer();
    await until(async () => (await queue.getJobState(job.id ?? '')) === 'waiting');
    await worker.close();
    // BullMQ 6 marks it (a deferred failure) and back in wait; the next Worker to take it fails it.
    const processed: string[] = [];
    const next = new Worker(
      'given-up',
      async (j) => {
        processed.push(j.id ?? '');
      },
      { connection: redis, prefix },
    );
    closing.push(next);
    await until(async () => (await queue.getJobState(job.id ?? '')) === 'failed');
    expect((await Job.fromId(queue, job.id))?.failedReason).toBe(STALLED_TOO_OFTEN);
    expect(processed).toEqual([]);
    // And the script says so in so many words (the reason is matched as a string).
    const bullmq = dirname(createRequire(import.meta.url).resolve('bullmq'));
    const lua = readFileSync(join(bullmq, 'commands', 'moveStalledJobsToWait-9.lua'), 'utf8');
    expect(lua).toContain(`"${STALLED_TOO_OFTEN}"`);
  });
});

describe("BullMQ's clients and backend (clients.ts, worker-backend.ts)", () => {
  it('hands out the ioredis client behind a queue (bullClientOf), which coalesceBullWrites patches', async () => {
    const queue = queueNamed('client');
    const client = await bullClientOf(queue);
    expect(client).toBe(await queue.backend.client);
    expect(client).toBeInstanceOf(Redis);
    coalesceBullWrites(queue);
    await new Promise((r) => setImmediate(r));
    const stream = (client as { stream: { write: unknown } }).stream;
    expect(Object.getOwnPropertySymbols(stream).map(String)).toContain(
      'Symbol(baton.writeCoalescing)',
    );
    expect((await queue.add('j', {})).id).toBeDefined();
  });

  it('hands out the ioredis client behind a worker (bullClientOf), on which it sends commands', async () => {
    const worker = manualWorker('client-worker');
    const client = await bullClientOf(worker);
    expect(client).toBe(await worker.backend.client);
    expect(client).toBeInstanceOf(Redis);
    expect(await (client as Redis).ping()).toBe('PONG');
  });

  it("keeps the classes worker-backend.ts extends and builds, with BullMQ's names", async () => {
    expect(typeof RedisQueueBackend.prototype.waitForJob).toBe('function');
    // (connection, name, keys, toKey, opts, blocking?, ownsConnection?)
    expect(RedisQueueBackend.length).toBeGreaterThanOrEqual(5);
    expect(new QueueKeys(prefix).getKeys('b')).toMatchObject({
      marker: `${prefix}:b:marker`,
      wait: `${prefix}:b:wait`,
    });
    // On one Redis, workerBackend is BullMQ's own backend.
    const queue = queueNamed('backend');
    const worker = new Worker(
      'backend',
      async () => undefined,
      {
        connection: redis,
        prefix,
        autorun: false,
      },
      workerBackend,
    );
    closing.push(worker);
    expect(worker.getBackend()).toBeInstanceOf(RedisQueueBackend);
    expect(createRedisBackend).toBeTypeOf('function');
    // A Worker's blocking connection is named <prefix>:<base64 of the queue name> (getWorkers).
    void worker.run();
    const name = `${prefix}:${Buffer.from('backend').toString('base64')}`;
    await until(async () => String(await redis.client('LIST')).includes(`name=${name} `));
    expect((await queue.getWorkers()).length).toBeGreaterThan(0);
  });
});
