import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Message } from '@baton/protocol';
import { uniquePrefix } from '@baton/testing/redis';
import { monitorCommands } from '@baton/testing/redis-monitor';
import { createdRun } from '@baton/testing/redis-runs';
import { RedisThreadStore, RunAlreadyReleasedError, windowOf } from './thread-store.ts';
import { RedisRunStore } from '../run-record/redis-run-store.ts';

const url = inject('redisUrl');
const redis = new Redis(url, { maxRetriesPerRequest: 1 });

afterAll(async () => {
  await redis.quit();
});

const T = 'tenant-a';
const TH = 'thread-1';
let prefix: string;
let clock: number;
let threads: RedisThreadStore;

beforeEach(() => {
  prefix = uniquePrefix('threads');
  clock = 100;
  threads = new RedisThreadStore({ redis, prefix, now: () => clock++ });
});

const user = (id: string, content = id): Message => ({ id, role: 'user', content });
const assistant = (id: string): Message => ({ id, role: 'assistant', content: '', toolCalls: [] });

describe('RedisThreadStore', () => {
  it('an empty thread loads as empty', async () => {
    expect(await threads.load(T, TH)).toEqual({
      messages: [],
      state: {},
      activeRunId: null,
      queued: [],
      runIds: [],
    });
  });

  it('acquire on an idle thread makes the run active (idempotently)', async () => {
    expect(await threads.acquire(T, TH, 'r1', 'reject')).toEqual({ kind: 'acquired' });
    expect(await threads.acquire(T, TH, 'r1', 'reject')).toEqual({ kind: 'acquired' });
    const t = await threads.load(T, TH);
    expect(t.activeRunId).toBe('r1');
    expect(t.runIds).toEqual(['r1']);
  });

  it("'reject' reports busy and changes nothing", async () => {
    await threads.acquire(T, TH, 'r1', 'reject');
    expect(await threads.acquire(T, TH, 'r2', 'reject')).toEqual({
      kind: 'busy',
      activeRunId: 'r1',
    });
    const t = await threads.load(T, TH);
    expect(t.queued).toEqual([]);
    expect(t.runIds).toEqual(['r1']);
  });

  it("'enqueue' queues at the tail and release promotes in FIFO order", async () => {
    await threads.acquire(T, TH, 'r1', 'enqueue');
    expect(await threads.acquire(T, TH, 'r2', 'enqueue')).toEqual({
      kind: 'queued',
      position: 1,
      activeRunId: 'r1',
    });
    expect(await threads.acquire(T, TH, 'r3', 'enqueue')).toEqual({
      kind: 'queued',
      position: 2,
      activeRunId: 'r1',
    });
    // re-acquiring a queued run reports its current position without queueing it twice
    expect(await threads.acquire(T, TH, 'r3', 'enqueue')).toEqual({
      kind: 'queued',
      position: 2,
      activeRunId: 'r1',
    });
    expect((await threads.load(T, TH)).queued).toEqual(['r2', 'r3']);

    expect(await threads.release(T, TH, 'r1', [user('m1')], null)).toBe('r2');
    expect((await threads.load(T, TH)).activeRunId).toBe('r2');
    expect(await threads.release(T, TH, 'r2', [user('m2')], null)).toBe('r3');
    expect(await threads.release(T, TH, 'r3', [user('m3')], null)).toBeNull();
    const t = await threads.load(T, TH);
    expect(t.activeRunId).toBeNull();
    expect(t.queued).toEqual([]);
    expect(t.messages.map((m) => m.id)).toEqual(['m1', 'm2', 'm3']);
    expect(t.runIds).toEqual(['r1', 'r2', 'r3']);
    // the thread is idle again
    expect(await threads.acquire(T, TH, 'r4', 'reject')).toEqual({ kind: 'acquired' });
  });

  it("'interrupt' queues at the front and is promoted when the active run releases", async () => {
    await threads.acquire(T, TH, 'r1', 'enqueue');
    await threads.acquire(T, TH, 'q1', 'enqueue');
    expect(await threads.acquire(T, TH, 'i1', 'interrupt')).toEqual({
      kind: 'interrupt',
      activeRunId: 'r1',
    });
    expect(await threads.acquire(T, TH, 'i1', 'interrupt')).toEqual({
      kind: 'interrupt',
      activeRunId: 'r1',
    });
    expect((await threads.load(T, TH)).queued).toEqual(['i1', 'q1']);
    // the caller cancels r1; its release promotes the interrupter, not the earlier queued run
    expect(await threads.release(T, TH, 'r1', [], null)).toBe('i1');
    expect(await threads.release(T, TH, 'i1', [], null)).toBe('q1');
    expect(await threads.release(T, TH, 'q1', [], null)).toBeNull();
  });

  it('abandon gives the thread back unmarked: the same run acquires it again', async () => {
    await threads.acquire(T, TH, 'never', 'reject');
    await threads.acquire(T, TH, 'next', 'enqueue');
    expect(await threads.abandon(T, TH, 'never')).toBe('next');
    expect(await threads.load(T, TH)).toMatchObject({ activeRunId: 'next', runIds: ['next'] });
    // Its resend (the same derived id) queues behind the promoted run instead of `released`.
    expect(await threads.acquire(T, TH, 'never', 'enqueue')).toMatchObject({ kind: 'queued' });
    // A run that existed and was released stays released.
    await threads.release(T, TH, 'next', [], null);
    expect(await threads.abandon(T, TH, 'next')).toBeNull();
    await expect(threads.acquire(T, TH, 'next', 'reject')).rejects.toBeInstanceOf(
      RunAlreadyReleasedError,
    );
  });

  it('release is idempotent per run: appends once and returns the same promotion', async () => {
    await threads.acquire(T, TH, 'r1', 'enqueue');
    await threads.acquire(T, TH, 'r2', 'enqueue');
    const msgs = [user('u1', 'hi'), assistant('a1')];
    expect(await threads.release(T, TH, 'r1', msgs, { topic: 'x', list: [], obj: {} })).toBe('r2');
    expect(await threads.release(T, TH, 'r1', msgs, { topic: 'overwritten?' })).toBe('r2');
    const t = await threads.load(T, TH);
    expect(t.messages).toEqual(msgs);
    expect(t.state).toEqual({ topic: 'x', list: [], obj: {} });
    expect(t.activeRunId).toBe('r2');
    await expect(threads.acquire(T, TH, 'r1', 'enqueue')).rejects.toBeInstanceOf(
      RunAlreadyReleasedError,
    );
  });

  it('release appends a long history in order, in one RPUSH per thousand messages', async () => {
    // 2,500 crosses two batch boundaries; a batch cut in the wrong place drops or repeats one
    const many = Array.from({ length: 2_500 }, (_, i) => user(`m${i}`));
    await threads.acquire(T, TH, 'r1', 'reject');
    await threads.release(T, TH, 'r1', many, null);
    expect((await threads.load(T, TH)).messages.map((m) => m.id)).toEqual(many.map((m) => m.id));
  });

  it('concurrent releases of the same run append exactly once', async () => {
    await threads.acquire(T, TH, 'r1', 'enqueue');
    await threads.acquire(T, TH, 'r2', 'enqueue');
    const results = await Promise.all(
      Array.from({ length: 10 }, () => threads.release(T, TH, 'r1', [user('once')], { n: 1 })),
    );
    expect(new Set(results)).toEqual(new Set(['r2']));
    expect((await threads.load(T, TH)).messages).toEqual([user('once')]);
  });

  it('state null keeps the previous thread state; history accumulates across runs', async () => {
    await threads.acquire(T, TH, 'r1', 'reject');
    await threads.release(T, TH, 'r1', [user('a')], { k: 1 });
    await threads.acquire(T, TH, 'r2', 'reject');
    await threads.release(T, TH, 'r2', [user('b')], null);
    const t = await threads.load(T, TH);
    expect(t.state).toEqual({ k: 1 });
    expect(t.messages.map((m) => m.id)).toEqual(['a', 'b']);
  });

  it('history: the known messages when the thread still ends where they do, else the thread', async () => {
    await threads.acquire(T, TH, 'r1', 'reject');
    await threads.release(T, TH, 'r1', [user('a'), assistant('b')], { k: 1 });
    const known = (await threads.load(T, TH)).messages;
    const same = await threads.history(T, TH, known);
    // The very objects: the thread was not read again.
    expect(same.messages[0]).toBe(known[0]);
    expect(same.messages.map((m) => m.id)).toEqual(['a', 'b']);
    expect(same.state).toEqual({ k: 1 });
    // The thread moved on: its messages, read again.
    await threads.acquire(T, TH, 'r2', 'reject');
    await threads.release(T, TH, 'r2', [user('c')], null);
    const moved = await threads.history(T, TH, known);
    expect(moved.messages.map((m) => m.id)).toEqual(['a', 'b', 'c']);
    // Same length, another last message (the thread was deleted and written anew).
    const other = [user('a'), assistant('x'), user('y')];
    const replaced = await threads.history(T, TH, other);
    expect(replaced.messages.map((m) => m.id)).toEqual(['a', 'b', 'c']);
    // Nothing known: everything.
    expect((await threads.history(T, TH)).messages.map((m) => m.id)).toEqual(['a', 'b', 'c']);
  });

  it('releasing a queued run that never started removes it from the queue', async () => {
    await threads.acquire(T, TH, 'r1', 'enqueue');
    await threads.acquire(T, TH, 'r2', 'enqueue');
    await threads.acquire(T, TH, 'r3', 'enqueue');
    expect(await threads.release(T, TH, 'r2', [], null)).toBeNull();
    const t = await threads.load(T, TH);
    expect(t.activeRunId).toBe('r1');
    expect(t.queued).toEqual(['r3']);
    expect(await threads.release(T, TH, 'r1', [], null)).toBe('r3');
  });

  it('a queued run that never started writes neither history nor state when released', async () => {
    await threads.acquire(T, TH, 'active', 'reject');
    await threads.acquire(T, TH, 'queued', 'enqueue');
    await threads.release(T, TH, 'queued', [user('q-input')], { leaked: true });
    const t = await threads.load(T, TH);
    expect(t.messages).toEqual([]);
    expect(t.state).toEqual({});
    expect(t.activeRunId).toBe('active');
    expect(t.queued).toEqual([]);
    await threads.release(T, TH, 'active', [user('a-input'), assistant('a-reply')], { kept: true });
    const after = await threads.load(T, TH);
    expect(after.messages.map((m) => m.id)).toEqual(['a-input', 'a-reply']);
    expect(after.state).toEqual({ kept: true });
  });

  it('exactly one of many concurrent acquirers of an idle thread wins', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => threads.acquire(T, TH, `r${i}`, 'reject')),
    );
    const winners = results.flatMap((r, i) => (r.kind === 'acquired' ? [`r${i}`] : []));
    expect(winners).toHaveLength(1);
    for (const r of results) if (r.kind === 'busy') expect(r.activeRunId).toBe(winners[0]);
  });

  it('threads are isolated per tenant and thread id', async () => {
    await threads.acquire(T, TH, 'r1', 'reject');
    expect(await threads.acquire('tenant-b', TH, 'r2', 'reject')).toEqual({ kind: 'acquired' });
    expect(await threads.acquire(T, 'thread-2', 'r3', 'reject')).toEqual({ kind: 'acquired' });
    expect((await threads.load(T, TH)).runIds).toEqual(['r1']);
  });

  it("shares the thread's run index with RedisRunStore", async () => {
    const runs = new RedisRunStore({ redis, prefix, now: () => 1 });
    const run = createdRun({ tenantId: T, threadId: TH, runId: 'r-store' }, 50);
    await runs.create(run.checkpoint, run.events);
    await threads.acquire(T, TH, 'r-store', 'reject');
    await threads.acquire(T, TH, 'r-later', 'enqueue');
    expect((await threads.load(T, TH)).runIds).toEqual(['r-store', 'r-later']);
  });

  describe('forgetRun (a deleted run leaves its thread)', () => {
    async function turn(runId: string, messages: Message[], state?: Record<string, string>) {
      await threads.acquire(T, TH, runId, 'reject');
      await threads.release(T, TH, runId, messages, state ?? null);
    }

    it("removes the run's own block, found from the end, even when its ids repeat earlier", async () => {
      // Caller-chosen ids may repeat: r2 reuses r1's user id; only r2's block goes.
      await turn('r1', [user('u', 'first'), assistant('a1')]);
      await turn('r2', [user('u', 'second'), assistant('a2')]);
      await turn('r3', [user('u3'), assistant('a3')]);
      expect(await threads.forgetRun(T, TH, 'r2', ['u', 'a2'])).toEqual({
        kind: 'kept',
        removedMessages: 2,
      });
      const t = await threads.load(T, TH);
      expect(t.messages.map((m) => m.content || m.id)).toEqual(['first', 'a1', 'u3', 'a3']);
      expect(t.runIds).toEqual(['r1', 'r3']);
      // Idempotent: the block is gone, nothing else matches.
      expect(await threads.forgetRun(T, TH, 'r2', ['u', 'a2'])).toEqual({
        kind: 'kept',
        removedMessages: 0,
      });
      // The kept thread still expires like a released one.
      expect(await redis.ttl(threads.keys.thread(T, TH).messages)).toBeGreaterThan(0);
    });

    it('deletes the whole thread (history, state) when its last run leaves', async () => {
      await turn('r1', [user('u1'), assistant('a1')], { topic: 'secret' });
      expect(await threads.forgetRun(T, TH, 'r1', ['u1', 'a1'])).toEqual({
        kind: 'deleted',
        removedMessages: 2,
      });
      for (const key of threads.keys.threadDataKeys(T, TH)) expect(await redis.exists(key)).toBe(0);
      expect(await threads.history(T, TH)).toEqual({ messages: [], state: {} });
    });

    it('refuses while the run still holds the thread, and keeps a thread with a queued run', async () => {
      await threads.acquire(T, TH, 'r1', 'reject');
      expect(await threads.forgetRun(T, TH, 'r1', [])).toEqual({ kind: 'active' });
      await threads.acquire(T, TH, 'r2', 'enqueue');
      await threads.release(T, TH, 'r1', [user('u1')], null);
      // r2 is active now; r1 leaves, the thread stays for r2.
      expect((await threads.forgetRun(T, TH, 'r1', ['u1'])).kind).toBe('kept');
      const t = await threads.load(T, TH);
      expect(t.activeRunId).toBe('r2');
      expect(t.messages).toEqual([]);
    });
  });

  describe('limits, pages and the history window (issue 32 item 7)', () => {
    const tool = (id: string): Message => ({
      id,
      role: 'tool',
      toolCallId: `c-${id}`,
      toolName: 't',
      content: 'ok',
      isError: false,
    });
    const bytesOf = (ms: readonly Message[]): number =>
      ms.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0);
    let limited: RedisThreadStore;
    beforeEach(() => {
      limited = new RedisThreadStore({
        redis,
        prefix,
        now: () => clock++,
        limits: { maxMessages: 10, maxBytes: 4_000, windowMessages: 4, windowBytes: 100_000 },
      });
    });
    async function turn(runId: string, messages: Message[]): Promise<void> {
      expect(await limited.acquire(T, TH, runId, 'reject')).toEqual({ kind: 'acquired' });
      await limited.release(T, TH, runId, messages, null);
    }

    it('refuses a new run past the message limit (nothing written), answers its resends as before', async () => {
      await turn(
        'r1',
        Array.from({ length: 9 }, (_, i) => user(`m${String(i)}`)),
      );
      const before = await redis.zrange(limited.keys.thread(T, TH).runs, '0', '-1');
      expect(await limited.acquire(T, TH, 'r2', 'reject', 1, [user('x'), user('y')])).toEqual({
        kind: 'too_large',
        messages: 9,
        bytes: bytesOf(Array.from({ length: 9 }, (_, i) => user(`m${String(i)}`))),
      });
      expect(await redis.zrange(limited.keys.thread(T, TH).runs, '0', '-1')).toEqual(before);
      expect(await redis.hget(limited.keys.thread(T, TH).meta, 'activeRunId')).toBeNull();
      // one more fits; the run that holds the thread is answered as before, whatever the size
      expect(await limited.acquire(T, TH, 'r2', 'reject', 1, [user('x')])).toEqual({
        kind: 'acquired',
      });
      expect(await limited.acquire(T, TH, 'r2', 'reject', 1, [user('x'), user('y')])).toEqual({
        kind: 'acquired',
      });
      // its release appends all it has, past the limit: the next run is refused
      await limited.release(T, TH, 'r2', [user('x'), assistant('x2')], null);
      expect((await limited.acquire(T, TH, 'r3', 'reject')).kind).toBe('too_large');
    });

    it('refuses past the byte limit, measuring only what was appended since it last measured', async () => {
      const fat = (id: string): Message => user(id, 'x'.repeat(900));
      await turn('r1', [fat('a'), fat('b')]);
      await turn('r2', [fat('c')]);
      const meta = limited.keys.thread(T, TH).meta;
      expect(await redis.hmget(meta, 'blen', 'bytes')).toEqual([
        '2',
        String(bytesOf([fat('a'), fat('b')])),
      ]);
      const held = bytesOf([fat('a'), fat('b'), fat('c')]);
      expect(await limited.acquire(T, TH, 'r3', 'reject', 1, [fat('d'), fat('e')])).toEqual({
        kind: 'too_large',
        messages: 3,
        bytes: held,
      });
      expect(await redis.hmget(meta, 'blen', 'bytes')).toEqual(['3', String(held)]);
      expect((await limited.acquire(T, TH, 'r3', 'reject', 1, [fat('d')])).kind).toBe('acquired');
    });

    it('pages: the newest first, older ones by position, whole messages within the byte bound', async () => {
      const all = Array.from({ length: 9 }, (_, i) => user(`m${String(i)}`));
      await turn('r1', all);
      const big = { before: null, limit: 4, maxBytes: 1_000_000 };
      const p1 = await limited.page(T, TH, big);
      expect(p1.messages.map((m) => m.id)).toEqual(['m5', 'm6', 'm7', 'm8']);
      expect(p1.before).toBe(5);
      expect(p1.listLength).toBe(9);
      const p2 = await limited.page(T, TH, { ...big, before: 5 });
      expect(p2.messages.map((m) => m.id)).toEqual(['m1', 'm2', 'm3', 'm4']);
      const p3 = await limited.page(T, TH, { ...big, before: 1 });
      expect(p3.messages.map((m) => m.id)).toEqual(['m0']);
      expect(p3.before).toBeNull();
      // a position before the first (or a bogus one past the end) reads nothing, never the list
      expect((await limited.page(T, TH, { ...big, before: 0 })).messages).toEqual([]);
      expect((await limited.page(T, TH, { ...big, before: 50 })).messages).toEqual([]);
      // the byte bound keeps whole messages, and at least the newest one
      const one = bytesOf([all[8]!]);
      const tight = await limited.page(T, TH, { before: null, limit: 4, maxBytes: one * 2 + 1 });
      expect(tight.messages.map((m) => m.id)).toEqual(['m7', 'm8']);
      expect(tight.before).toBe(7);
      const tiny = await limited.page(T, TH, { before: null, limit: 4, maxBytes: 1 });
      expect(tiny.messages.map((m) => m.id)).toEqual(['m8']);
      expect(tiny.runs).toEqual([{ runId: 'r1', createdAt: expect.any(Number) as number }]);
    });

    it('a run is given the window: the newest messages, never a tool result without its call', async () => {
      await turn('r1', [user('u1'), assistant('a1'), user('u2'), assistant('a2'), tool('t2')]);
      await turn('r2', [assistant('a3')]);
      await limited.acquire(T, TH, 'r3', 'reject');
      const run = await limited.loadForRun(T, TH);
      // the last 4 are a2 t2 a3 … : t2's call a2 is in; window 4 = [u2, a2, t2, a3]
      expect(run.messages.map((m) => m.id)).toEqual(['u2', 'a2', 't2', 'a3']);
      expect(run.reference).toEqual({ listLength: 6, generation: 0, count: 4, start: 2 });
      expect(run.runIds).toEqual(['r1', 'r2', 'r3']);
      // The run that holds it reads the same window again (it was not read anew).
      const again = await limited.history(T, TH, run.messages);
      expect(again.messages[0]).toBe(run.messages[0]);
      // a queued run (nothing known) reads the window, not the list
      expect((await limited.history(T, TH)).messages.map((m) => m.id)).toEqual([
        'u2',
        'a2',
        't2',
        'a3',
      ]);
    });

    it("reads about the window's bytes, not its entries: large messages are read from the end in chunks", async () => {
      const fat = (id: string): Message => user(id, 'x'.repeat(9_000));
      const byBytes = new RedisThreadStore({
        redis,
        prefix,
        limits: { windowMessages: 500, windowBytes: 20_000 },
      });
      await byBytes.acquire(T, TH, 'r1', 'reject');
      await byBytes.release(
        T,
        TH,
        'r1',
        Array.from({ length: 200 }, (_, i) => fat(`f${String(i)}`)),
        null,
      );
      await byBytes.acquire(T, TH, 'r2', 'reject');
      let run: Awaited<ReturnType<RedisThreadStore['loadForRun']>> | undefined;
      const lines = await monitorCommands(inject('redisUrl'), async () => {
        run = await byBytes.loadForRun(T, TH);
      });
      expect(run?.messages.map((m) => m.id)).toEqual(['f198', 'f199']);
      expect(run?.reference).toMatchObject({ listLength: 200, count: 2, start: 198 });
      const key = `"${byBytes.keys.thread(T, TH).messages.toLowerCase()}"`;
      const reads = lines.filter((l) => l.includes('"lrange"') && l.includes(key));
      expect(reads.map((l) => l.slice(l.indexOf(key) + key.length).trim())).toEqual([
        '"150" "199"',
      ]);
    });

    it('windowOf: budgets in messages and bytes, tool results at its start dropped, removed entries skipped', () => {
      const entries = [user('u1'), assistant('a1'), tool('t1'), tool('t1b'), user('u2')].map((m) =>
        JSON.stringify(m),
      );
      const limits = { windowMessages: 3, windowBytes: 1_000_000 };
      // the last 3 start with two tool results: both go, their call is out of the window
      expect(windowOf(entries, 10, limits)).toEqual({ messages: [user('u2')], start: 14 });
      expect(
        windowOf(entries, 0, { ...limits, windowMessages: 4 }).messages.map((m) => m.id),
      ).toEqual(['a1', 't1', 't1b', 'u2']);
      // bytes: only what fits, whole messages
      const last = Buffer.byteLength(entries[4]!);
      expect(windowOf(entries, 0, { windowMessages: 10, windowBytes: last })).toEqual({
        messages: [user('u2')],
        start: 4,
      });
      expect(windowOf(entries, 0, { windowMessages: 10, windowBytes: last - 1 })).toEqual({
        messages: [],
        start: 5,
      });
      // removed entries (tombstones) count for nothing and never start the window
      const removed = [`~1~${entries[0]!}`, entries[1]!, `~1~${entries[4]!}`, entries[4]!];
      expect(windowOf(removed, 0, { windowMessages: 2, windowBytes: 1_000_000 })).toEqual({
        messages: [assistant('a1'), user('u2')],
        start: 1,
      });
    });
  });
});
