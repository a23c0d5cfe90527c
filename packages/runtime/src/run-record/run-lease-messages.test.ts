import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Checkpoint, Message } from '@baton/protocol';
import { uniquePrefix } from '@baton/testing/redis';
import { createdRun, nextCheckpoint } from '@baton/testing/redis-runs';
import { RunLeases } from './run-lease.ts';
import { RedisRunStore } from './redis-run-store.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
afterAll(async () => {
  await redis.quit();
});

let store: RedisRunStore;
let leases: RunLeases;
beforeEach(() => {
  const prefix = uniquePrefix('lmsg');
  store = new RedisRunStore({ redis, prefix, now: () => 1_000, retentionSeconds: 60 });
  leases = new RunLeases(redis, store.keys, 5_000);
});

const user = (id: string): Message => ({ id, role: 'user', content: id });

async function acquire(runId: string, known?: { name: string; count: number }) {
  const { acquired } = await leases.acquireAndLoad(runId, '', undefined, known);
  if (!acquired) throw new Error('not acquired');
  await acquired.lease.release();
  return acquired;
}

describe('RunLeases.acquireAndLoad: a named message list read from where the reader is', () => {
  it('reads only what was appended since, while the list keeps its name; all of it once renamed', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    const first = await acquire(runId);
    expect(first.messagesFrom).toBe(0);
    expect(first.messages).toHaveLength(run.checkpoint.messages.length);
    const name = first.messagesName;
    expect(name).toMatch(/^[\w-]{22}$/);

    // An append keeps the name: a reader that kept n messages gets the rest only.
    const cp2: Checkpoint = {
      ...nextCheckpoint(run.checkpoint),
      messages: [...run.checkpoint.messages, user('a'), user('b')],
    };
    await store.commit(runId, 1, cp2, [], null, { fence: '', base: run.checkpoint });
    const n = run.checkpoint.messages.length;
    const tail = await acquire(runId, { name: name!, count: n });
    expect(tail.messagesName).toBe(name);
    expect(tail.messagesFrom).toBe(n);
    expect(tail.messages.map((m) => (JSON.parse(m) as Message).id)).toEqual(['a', 'b']);

    // A commit that rewrites the list (its base shares no prefix) renames it: a reader with the
    // old name gets everything.
    const cp3: Checkpoint = { ...nextCheckpoint(cp2), messages: [user('x')] };
    await store.commit(runId, 2, cp3, [], null, {
      fence: '',
      base: {
        ...cp2,
        messages: [user('other')],
      },
    });
    const renamed = await acquire(runId, { name: name!, count: n + 2 });
    expect(renamed.messagesName).not.toBe(name);
    expect(renamed.messagesFrom).toBe(0);
    expect(renamed.messages.map((m) => (JSON.parse(m) as Message).id)).toEqual(['x']);
  });

  it('a recreated run (same id) has a list of another name', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    const before = (await acquire(runId)).messagesName;
    const k = store.keys.run(runId);
    await redis.del(k.cp, k.events, k.lease, k.pending, k.results, k.parent, k.failed, k.messages);
    await store.create(run.checkpoint, run.events);
    const after = await acquire(runId, { name: before!, count: 1 });
    expect(after.messagesName).not.toBe(before);
    expect(after.messagesFrom).toBe(0);
  });

  it('a list shorter than what the reader kept (Redis lost a suffix) is read whole', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    const name = (await acquire(runId)).messagesName!;
    const n = run.checkpoint.messages.length;
    const cp2: Checkpoint = {
      ...nextCheckpoint(run.checkpoint),
      messages: [...run.checkpoint.messages, user('a'), user('b')],
    };
    await store.commit(runId, 1, cp2, [], null, { fence: '', base: run.checkpoint });
    // A reader kept n + 2; Redis then comes back without that commit (same name, n messages).
    const k = store.keys.run(runId);
    await redis.ltrim(k.messages, 0, n - 1);
    const reread = await acquire(runId, { name, count: n + 2 });
    expect(reread.messagesName).toBe(name);
    expect(reread.messagesFrom).toBe(0);
    expect(reread.messages).toHaveLength(n);
  });
});

describe('RunLeases.acquireDecoded / releaseDecoded: the lease hands back the decoded checkpoint', () => {
  it('decodes the run it took; hands back a corrupt one as `failed` with the lease still held', async () => {
    const decoding = new RunLeases(redis, store.keys, 5_000, store);
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    const { acquired } = await decoding.acquireDecoded(runId, { driver: '' });
    if (!acquired || 'failed' in acquired) throw new Error('not acquired');
    expect(acquired.state?.version).toBe(1);
    expect(acquired.state?.checkpoint).toEqual(run.checkpoint);
    expect(acquired.awaited).toEqual({ fields: [], results: [] });
    // Nobody asked meanwhile: nothing to carry on.
    expect(await decoding.releaseDecoded(acquired.lease)).toBeNull();

    // Someone asks while it is held: the release hands back the run as it is now.
    const again = await decoding.acquireDecoded(runId, { driver: '' });
    if (!again.acquired || 'failed' in again.acquired) throw new Error('not acquired');
    expect(await decoding.acquire(runId)).toBeNull();
    expect((await decoding.releaseDecoded(again.acquired.lease))?.version).toBe(1);

    await redis.hset(store.keys.run(runId).cp, 'data', '{not json');
    const corrupt = await decoding.acquireDecoded(runId, { driver: '' });
    if (!corrupt.acquired || !('failed' in corrupt.acquired)) throw new Error('expected failed');
    expect((corrupt.acquired.failed as Error).name).toBe('CorruptCheckpointError');
    expect(await redis.get(store.keys.run(runId).lease)).toBe(corrupt.acquired.lease.token);
    await corrupt.acquired.lease.release();
  });
});
