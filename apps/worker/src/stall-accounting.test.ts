/**
 * StallAccounting against a real Redis, with the stall counts BullMQ keeps injected into the job
 * (its `stc` field): which lost locks count as deaths toward MAX_STALLS. The workers named here
 * never ran (no heartbeat, no control connection): every one of them is dead.
 */
import { randomUUID } from 'node:crypto';
import { Job, Queue, UnrecoverableError } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { BatonKeys, STALLED_TOO_OFTEN } from '@baton/runtime/internal';
import { StallAccounting } from './stall-accounting.ts';

const MAX_STALLS = 3;
const silentLogger = pino({ level: 'silent' });
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `stalls-${randomUUID().slice(0, 8)}`;
const keys = new BatonKeys(prefix);
const queue = new Queue('stalls', { connection: redis, prefix });

afterAll(async () => {
  await queue.close();
  redis.disconnect();
});

/** The accounting of worker `id` (dead, like every worker of this file). */
function workerNamed(id: string): StallAccounting {
  return new StallAccounting({
    redis,
    keys,
    workerId: id,
    maxStalls: MAX_STALLS,
    logger: silentLogger,
  });
}

/** The job as the next attempt's worker sees it: its lock lost `stalls` times so far. */
async function attempt(id: string, stalls: number): Promise<Job> {
  await redis.hset(queue.toKey(id), 'stc', stalls);
  const job = await Job.fromId(queue, id);
  if (!job) throw new Error(`no job ${id}`);
  return job;
}

/** A first attempt's note is not awaited by admit: wait until it is there. */
async function noted(id: string, holder: string): Promise<void> {
  while ((await redis.hget(queue.toKey(id), 'batonHolder')) !== holder)
    await new Promise((r) => setTimeout(r, 5));
}

async function deaths(id: string): Promise<number> {
  return Number((await redis.hget(queue.toKey(id), 'batonDeaths')) ?? 0);
}

/** Admits the attempt; the reason it was given up, or null. */
async function admit(by: StallAccounting, job: Job): Promise<string | null> {
  try {
    await by.admit(job);
    return null;
  } catch (error) {
    if (error instanceof UnrecoverableError) return error.message;
    throw error;
  }
}

describe('StallAccounting', () => {
  it('a job that never started (held in a process gate) is requeued, however often its workers die', async () => {
    const { id } = await queue.add('innocent', {});
    // Four workers fetched it and died while it waited behind others: no attempt noted a holder.
    const job = await attempt(id!, 4);
    expect(await admit(workerNamed('w5'), job)).toBeNull();
    // Counted, at 0: should BullMQ's backstop give it up, its call says no worker died of it.
    expect(await redis.hget(queue.toKey(id!), 'batonDeaths')).toBe('0');
  });

  it('only the attempt that started counts: one death, then the unnoted losses are requeues', async () => {
    const { id } = await queue.add('started-once', {});
    // w1 started it (noted at stall count 0) and died; three more workers held it unstarted.
    await workerNamed('w1').admit(await attempt(id!, 0));
    await noted(id!, 'w1');
    expect(await admit(workerNamed('w5'), await attempt(id!, 4))).toBeNull();
    expect(await deaths(id!)).toBe(1);
  });

  it('a job that kills every worker that starts it is still given up after MAX_STALLS deaths', async () => {
    const { id } = await queue.add('poison', {});
    await workerNamed('w1').admit(await attempt(id!, 0));
    await noted(id!, 'w1');
    const reasons: (string | null)[] = [];
    for (let stalls = 1; stalls <= MAX_STALLS + 1; stalls += 1)
      reasons.push(await admit(workerNamed(`w${String(stalls + 1)}`), await attempt(id!, stalls)));
    expect(reasons).toEqual([null, null, null, STALLED_TOO_OFTEN]);
    expect(await deaths(id!)).toBe(MAX_STALLS + 1);
  });
});
