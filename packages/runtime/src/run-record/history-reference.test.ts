import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Checkpoint, Message } from '@baton/protocol';
import { uniquePrefix } from '@baton/testing/redis';
import { monitorCommands } from '@baton/testing/redis-monitor';
import { createdRun, nextCheckpoint } from '@baton/testing/redis-runs';
import { RedisRunStore } from './redis-run-store.ts';
import { RedisThreadStore } from '../redis/thread-store.ts';
import { RunLeases } from './run-lease.ts';
import { decodeReference } from './history-reference.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

const T = 'tenant-a';
const TH = 'thread-1';
let store: RedisRunStore;
let threads: RedisThreadStore;
let leases: RunLeases;
let prefix: string;
beforeEach(() => {
  prefix = uniquePrefix('histref');
  store = new RedisRunStore({ redis, prefix, now: () => 1_000, retentionSeconds: 60 });
  threads = new RedisThreadStore({ redis, prefix });
  leases = new RunLeases(redis, store.keys, 5_000, store);
});

const user = (id: string): Message => ({ id, role: 'user', content: `${id} `.repeat(50) });
const ids = (messages: readonly Message[]): string[] => messages.map((m) => m.id);

/** A finished turn of the thread: run `runId` appends `messages`. */
async function turn(runId: string, messages: Message[]): Promise<void> {
  await threads.acquire(T, TH, runId, 'reject');
  await threads.release(T, TH, runId, messages, null);
}

/** A run created on the thread as RunService does: the thread's history, then its input. */
async function startOnThread(runId: string): Promise<Checkpoint> {
  await threads.acquire(T, TH, runId, 'reject');
  const thread = await threads.loadForRun(T, TH);
  const base = createdRun({ runId, tenantId: T, threadId: TH }).checkpoint;
  const checkpoint: Checkpoint = {
    ...base,
    messages: [...thread.messages, ...base.messages],
    historyLength: thread.messages.length,
  };
  await store.create(checkpoint, [], { threadIndexed: true, history: thread.reference });
  return checkpoint;
}

describe('a run references its thread history instead of copying it', () => {
  it('keeps only its own messages in its list, and loads, commits and leases the whole conversation', async () => {
    const history = Array.from({ length: 200 }, (_, i) => user(`h${String(i)}`));
    await turn('r0', history);
    const cp = await startOnThread('r1');
    const own = store.keys.run('r1').messages;
    expect(await redis.llen(own)).toBe(cp.messages.length - 200);
    expect(ids((await store.load('r1'))!.checkpoint.messages)).toEqual(ids(cp.messages));

    // An append writes only what is new, after the run's own messages.
    const next = { ...nextCheckpoint(cp), messages: [...cp.messages, user('reply')] };
    await store.commit('r1', 1, next, [], null, { base: cp });
    expect(await redis.llen(own)).toBe(next.messages.length - 200);
    expect(ids((await store.loadValidated('r1'))!.checkpoint.messages)).toEqual(ids(next.messages));
    const leased = await leases.acquireDecoded('r1', { driver: '' });
    if (!leased.acquired || 'failed' in leased.acquired) throw new Error('not acquired');
    expect(ids(leased.acquired.state!.checkpoint.messages)).toEqual(ids(next.messages));
    await leased.acquired.lease.release();

    // A run's bytes do not grow with its thread's history.
    const small = await startOnThreadOf('r2', 0);
    expect(await redis.memory('USAGE', own)).toBeLessThan(
      2 * ((await redis.memory('USAGE', store.keys.run(small).messages)) ?? 0) + 1_000,
    );
  });

  it('still reads the messages a deleted earlier run took out of the thread after it was created', async () => {
    await turn('r0', [user('a'), user('b')]);
    await turn('r1', [user('c'), user('d')]);
    const cp = await startOnThread('r2');
    expect(await threads.forgetRun(T, TH, 'r0', ['a', 'b'])).toEqual({
      kind: 'kept',
      removedMessages: 2,
    });
    // The thread's readers no longer see them; the run created before still has them.
    expect(ids((await threads.load(T, TH)).messages)).toEqual(['c', 'd']);
    expect(ids((await threads.history(T, TH, cp.messages.slice(0, 4))).messages)).toEqual([
      'c',
      'd',
    ]);
    expect(ids((await store.load('r2'))!.checkpoint.messages)).toEqual(ids(cp.messages));
    // A run released after the removal appends after it; a run created then sees no removed one.
    await threads.release(T, TH, 'r2', [user('e')], null);
    const later = await startOnThread('r3');
    expect(ids(later.messages.slice(0, later.historyLength))).toEqual(['c', 'd', 'e']);
    expect(ids((await store.load('r3'))!.checkpoint.messages)).toEqual(ids(later.messages));
    // The block of a run found among the messages still there, not the removed ones.
    expect(await threads.forgetRun(T, TH, 'r1', ['c', 'd'])).toMatchObject({ removedMessages: 2 });
    expect(ids((await threads.load(T, TH)).messages)).toEqual(['e']);
    expect(ids((await store.load('r3'))!.checkpoint.messages)).toEqual(ids(later.messages));
  });

  it('a run on a thread longer than the window references the window: reads, commits and leases only it', async () => {
    threads = new RedisThreadStore({
      redis,
      prefix,
      limits: { windowMessages: 30 },
    });
    const history = Array.from({ length: 200 }, (_, i) => user(`h${String(i)}`));
    await turn('r0', history);
    const cp = await startOnThread('r1');
    expect(ids(cp.messages.slice(0, cp.historyLength))).toEqual(ids(history.slice(-30)));
    expect(await redis.hget(store.keys.run('r1').cp, 'hist')).toBe('30:200:0:170');
    expect(decodeReference('30:200:0:170')).toEqual({
      count: 30,
      listLength: 200,
      generation: 0,
      start: 170,
    });
    expect(ids((await store.load('r1'))!.checkpoint.messages)).toEqual(ids(cp.messages));
    const next = { ...nextCheckpoint(cp), messages: [...cp.messages, user('reply')] };
    await store.commit('r1', 1, next, [], null, { base: cp });
    const leased = await leases.acquireDecoded('r1', { driver: '' });
    if (!leased.acquired || 'failed' in leased.acquired) throw new Error('not acquired');
    expect(ids(leased.acquired.state!.checkpoint.messages)).toEqual(ids(next.messages));
    await leased.acquired.lease.release();
    // what the run's loads read of the thread: its window, never the list from its start
    const reads = (
      await monitorCommands(inject('redisUrl'), async () => {
        await store.load('r1');
      })
    ).filter((l) => l.includes('"lrange"'));
    const threadKey = threads.keys.thread(T, TH).messages.toLowerCase();
    const ofThread = reads.filter((l) => l.includes(threadKey));
    expect(ofThread.length).toBe(1);
    expect(ofThread[0]).toContain(`"${threadKey}" "170" "199"`);
  });

  it('a commit that rewrites the history stores the whole list and drops the reference', async () => {
    await turn('r0', [user('a'), user('b')]);
    const cp = await startOnThread('r1');
    const rewritten = { ...nextCheckpoint(cp), messages: [user('x'), ...cp.messages.slice(2)] };
    await store.commit('r1', 1, rewritten, [], null, { base: cp });
    expect(await redis.llen(store.keys.run('r1').messages)).toBe(rewritten.messages.length);
    expect(await redis.hexists(store.keys.run('r1').cp, 'hist')).toBe(0);
    expect(ids((await store.load('r1'))!.checkpoint.messages)).toEqual(ids(rewritten.messages));
    const again = { ...nextCheckpoint(rewritten), messages: [...rewritten.messages, user('y')] };
    await store.commit('r1', 2, again, [], null, { base: rewritten });
    expect(ids((await store.load('r1'))!.checkpoint.messages)).toEqual(ids(again.messages));
  });
});

/** A run on a thread of its own with `n` history messages; returns its id. */
async function startOnThreadOf(runId: string, n: number): Promise<string> {
  const thread = `other-${runId}`;
  if (n > 0) {
    await threads.acquire(T, thread, `${runId}-seed`, 'reject');
    await threads.release(T, thread, `${runId}-seed`, [user('s')], null);
  }
  await threads.acquire(T, thread, runId, 'reject');
  const loaded = await threads.loadForRun(T, thread);
  const base = createdRun({ runId, tenantId: T, threadId: thread }).checkpoint;
  await store.create(
    { ...base, messages: [...loaded.messages, ...base.messages], historyLength: n },
    [],
    { history: loaded.reference },
  );
  return runId;
}
