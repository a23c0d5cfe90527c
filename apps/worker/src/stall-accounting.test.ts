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
import {
  BatonKeys,
  RunLeases,
  STALLED_TOO_OFTEN,
  ToolResultMailbox,
} from '@baton/runtime/internal';
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

/**
 * A first attempt started by worker `holder`: on a single Redis admit hands its note to the job
 * processor, which writes it with its first script: a step job's lease acquire (`via` 'lease'),
 * a tool job's checkpoint read ('read').
 */
async function started(id: string, holder: string, via: 'lease' | 'read'): Promise<void> {
  const note = await workerNamed(holder).admit(await attempt(id, 0));
  expect(note).not.toBeNull();
  // Nothing written by admit itself: the note rides with the processor's first round trip.
  expect(await redis.hget(queue.toKey(id), 'batonHolder')).toBeNull();
  const runId = `run-${randomUUID()}`;
  if (via === 'lease') {
    const leases = new RunLeases(redis, keys, 10_000);
    await leases.acquireAndLoad(runId, '', undefined, undefined, note ?? undefined);
  } else {
    await new ToolResultMailbox(redis, keys).lookup(runId, 'call', 0, true, note ?? undefined);
  }
  expect(await redis.hmget(queue.toKey(id), 'batonHolder', 'batonStalls')).toEqual([holder, '0']);
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
    await started(id!, 'w1', 'read');
    expect(await admit(workerNamed('w5'), await attempt(id!, 4))).toBeNull();
    expect(await deaths(id!)).toBe(1);
  });

  it('a note for a job that is gone writes nothing (no stray hash)', async () => {
    const { id } = await queue.add('gone', {});
    const note = await workerNamed('w1').admit(await attempt(id!, 0));
    await queue.remove(id!);
    await new ToolResultMailbox(redis, keys).lookup(
      'run-gone',
      'call',
      0,
      false,
      note ?? undefined,
    );
    await new RunLeases(redis, keys, 10_000).acquireAndLoad(
      'run-gone',
      '',
      undefined,
      undefined,
      note ?? undefined,
    );
    expect(await redis.exists(queue.toKey(id!))).toBe(0);
  });

  it('a job that kills every worker that starts it is still given up after MAX_STALLS deaths', async () => {
    const { id } = await queue.add('poison', {});
    await started(id!, 'w1', 'lease');
    const reasons: (string | null)[] = [];
    for (let stalls = 1; stalls <= MAX_STALLS + 1; stalls += 1)
      reasons.push(await admit(workerNamed(`w${String(stalls + 1)}`), await attempt(id!, stalls)));
    expect(reasons).toEqual([null, null, null, STALLED_TOO_OFTEN]);
    expect(await deaths(id!)).toBe(MAX_STALLS + 1);
  });
});
