/**
 * A reply lost after Redis ran the command (Redis restarting, the network dropping) makes ioredis
 * re-send it on the next connection: every write a worker sends must land once however often it
 * arrives. Real Redis behind a proxy that loses exactly one reply.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { VersionConflictError } from '@baton/core';
import { uniquePrefix } from '@baton/testing/redis';
import { startReplyCutter, type ReplyCutter } from '@baton/testing/reply-cutter';
import { createdRun, nextCheckpoint, textDelta } from '@baton/testing/redis-runs';
import { redisOptions } from './connection.ts';
import { RedisRunStore } from '../run-record/redis-run-store.ts';
import { RedisThreadStore } from './thread-store.ts';
import { BatonKeys } from './keys.ts';
import { WebhookStore } from '../run-record/webhook-store.ts';

let cutter: ReplyCutter;
let worker: Redis;
const direct = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });

beforeAll(async () => {
  cutter = await startReplyCutter(inject('redisUrl'));
  // A worker's connection: commands wait through an outage and are re-sent after it.
  worker = new Redis(cutter.url, redisOptions('worker', 'lost-replies'));
});

afterAll(async () => {
  worker.disconnect();
  await direct.quit();
  await cutter.close();
});

let store: RedisRunStore;
beforeEach(() => {
  store = new RedisRunStore({ redis: worker, prefix: uniquePrefix('lost'), now: () => 7_000 });
});

/** Runs `write` with the reply to its (single) command lost; resolves or rejects as it does. */
async function withLostReply<T>(write: () => Promise<T>): Promise<PromiseSettledResult<T>> {
  const cut = cutter.cutNextReply();
  const settled = Promise.allSettled([write()]);
  await cut;
  const [result] = await settled;
  return result;
}

describe('a write whose reply was lost is re-sent and lands once', () => {
  it('a streamed delta (the append is numbered within its attempt)', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    await direct.set(store.keys.run(runId).lease, 'holder', 'PX', 60_000);
    const attempt = (index: number) => ({
      step: 1,
      nonce: 'n1',
      reset: { type: 'inference.reset' as const, step: 1, messageId: 'm-1' },
      index,
    });
    // The first append also loads the script: the cut reply is the append's own.
    await store.appendDeltas(runId, 'holder', attempt(0), [textDelta(1, 'don')]);
    const resent = await withLostReply(() =>
      store.appendDeltas(runId, 'holder', attempt(1), [textDelta(1, 'e')]),
    );
    expect(resent.status).toBe('fulfilled');
    await store.appendDeltas(runId, 'holder', attempt(2), [textDelta(1, '!')]);

    const deltas = (await store.readEvents(runId)).filter((e) => e.type === 'text.delta');
    expect(deltas.map((e) => (e.type === 'text.delta' ? e.delta : ''))).toEqual(['don', 'e', '!']);
    // gapless seqs: nothing was written and then skipped
    const seqs = (await store.readEvents(runId)).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('a create (the re-sent one is told it created the run, with its events)', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const resent = await withLostReply(() => store.create(run.checkpoint, run.events));
    expect(resent.status).toBe('fulfilled');
    const created = (resent as PromiseFulfilledResult<Awaited<ReturnType<typeof store.create>>>)
      .value;
    expect(created.version).toBe(1);
    expect(created.events).toEqual(await store.readEvents(runId));
    expect(created.events).toHaveLength(run.events.length);
    // Another create of the same run is still refused.
    await expect(store.create(run.checkpoint, run.events)).rejects.toBeInstanceOf(
      VersionConflictError,
    );
  });

  it('a commit (compare-and-set: the re-sent one finds its own version and writes nothing)', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    const next = nextCheckpoint(run.checkpoint, { status: 'running' });
    const before = (await store.readEvents(runId)).length;
    const resent = await withLostReply(() =>
      store.commit(runId, 1, next, [textDelta(1, 'once')], 'run_start_replay', {
        fence: '',
        base: run.checkpoint,
      }),
    );
    // The caller is told the version moved; it reloads and finds its own commit.
    expect(resent.status).toBe('rejected');
    expect((resent as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
    expect(await store.readEvents(runId)).toHaveLength(before + 1);
    expect((await store.load(runId))?.version).toBe(2);
    expect(await direct.llen(store.keys.run(runId).messages)).toBe(next.messages.length);
  });

  it("a thread's release (its messages are appended once per run)", async () => {
    const threads = new RedisThreadStore({ redis: worker, prefix: uniquePrefix('lost-th') });
    expect((await threads.acquire('t', 'th', 'r1', 'reject')).kind).toBe('acquired');
    const resent = await withLostReply(() =>
      threads.release('t', 'th', 'r1', [{ id: 'm-hi', role: 'user', content: 'hi' }], null),
    );
    expect(resent.status).toBe('fulfilled');
    expect((await threads.history('t', 'th')).messages).toEqual([
      { id: 'm-hi', role: 'user', content: 'hi' },
    ]);
  });

  it("a line of a run's webhook delivery log", async () => {
    const keys = new BatonKeys(uniquePrefix('lost-wh'));
    const webhooks = new WebhookStore(worker, keys);
    const k = keys.webhook('r1');
    await direct.hset(k.config, 'tenantId', 't');
    const line = (seq: number) =>
      ({
        k: 'enqueued',
        webhookId: `w${String(seq)}`,
        endpoint: 'run',
        type: 'run.finished',
        seq,
        at: 7_000,
      }) as const;
    await webhooks.append('r1', line(1));
    const resent = await withLostReply(() => webhooks.append('r1', line(2)));
    expect(resent.status).toBe('fulfilled');
    await webhooks.append('r1', line(3));
    expect((await webhooks.readLog('r1')).map((r) => r.seq)).toEqual([1, 2, 3]);
  });
});
