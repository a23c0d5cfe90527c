import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { CheckpointSchema, type RunEvent } from '@baton/protocol';
import { MemoryRunStore, VersionConflictError } from '@baton/core';
import { uniquePrefix } from '@baton/testing/redis';
import {
  createdRun,
  holderAppend,
  nextCheckpoint,
  textDelta,
  trickyBodies,
} from '@baton/testing/redis-runs';
import { LeaseLostError, RedisRunStore } from './redis-run-store.ts';
import { InvalidCursorError } from '../errors/invalid-cursor-error.ts';
import { BatonKeys, keyPart } from '../redis/keys.ts';
import { decodeEventPayload } from '../redis/event-payload.ts';

const url = inject('redisUrl');
const redis = new Redis(url, { maxRetriesPerRequest: 1 });
const sub = new Redis(url, { maxRetriesPerRequest: 1 });

afterAll(async () => {
  await Promise.all([redis.quit(), sub.quit()]);
});

let prefix: string;
let clock: number;
let store: RedisRunStore;

beforeEach(() => {
  prefix = uniquePrefix('runstore');
  clock = 5_000;
  store = new RedisRunStore({ redis, prefix, now: () => clock, retentionSeconds: 3_600 });
});

describe('keys', () => {
  it('puts every key of a run in one hash slot and escapes separators', () => {
    const keys = new BatonKeys('p');
    expect(keys.run('r1')).toEqual({
      cp: 'p:{run:r1}:cp',
      events: 'p:{run:r1}:events',
      channel: 'p:{run:r1}:ch',
      lease: 'p:{run:r1}:lease',
      pending: 'p:{run:r1}:pending',
      results: 'p:{run:r1}:results',
      parent: 'p:{run:r1}:parent',
      failed: 'p:{run:r1}:failed',
      messages: 'p:{run:r1}:messages',
    });
    expect(keys.thread('t', 'th').runs).toBe('p:{thread:t:th}:runs');
    expect(keys.tenantRuns('t')).toBe('p:{tenant:t}:runs');
    expect(keys.thread('a:b', 'c').meta).not.toBe(keys.thread('a', 'b:c').meta);
    expect(keyPart('x{y}:%')).toBe('x%7By%7D%3A%25');
    expect(new BatonKeys().prefix).toBe('baton');
  });
});

describe('RedisRunStore', () => {
  it('create/load round-trips an Engine checkpoint and sequences the creation events from 1', async () => {
    const run = createdRun();
    const created = await store.create(run.checkpoint, run.events);
    expect(created.version).toBe(1);
    expect(created.events.map((e) => e.seq)).toEqual(run.events.map((_, i) => i + 1));
    const id = run.checkpoint.identity;
    expect(created.events[0]).toEqual({
      seq: 1,
      runId: id.runId,
      threadId: id.threadId,
      turnId: id.turnId,
      at: 5_000,
      ...run.events[0],
    });
    // envelope fields first, body fields after (like MemoryRunStore's spread)
    expect(Object.keys(created.events[0]!).slice(0, 5)).toEqual([
      'seq',
      'runId',
      'threadId',
      'turnId',
      'at',
    ]);

    const loaded = await store.load(id.runId);
    expect(loaded).toEqual({ checkpoint: run.checkpoint, version: 1 });
    expect(await store.loadValidated(id.runId)).toEqual({
      checkpoint: CheckpointSchema.parse(run.checkpoint),
      version: 1,
    });
    expect(await store.load('nope')).toBeNull();
    expect(await store.lastSeq(id.runId)).toBe(run.events.length);
    expect(await store.lastSeq('nope')).toBe(0);
  });

  it('keeps messages in their own list: a commit over its base writes only the new ones', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const k = store.keys.run(runId);
    await store.create(run.checkpoint, run.events);
    const many = Array.from({ length: 200 }, (_, i) => ({
      id: `m${i}`,
      role: 'user' as const,
      content: `message ${i} `.repeat(10),
    }));
    const cp2 = {
      ...nextCheckpoint(run.checkpoint),
      messages: [...run.checkpoint.messages, ...many],
    };
    await store.commit(runId, 1, cp2, [], null, { fence: '', base: run.checkpoint });
    expect(await redis.llen(k.messages)).toBe(cp2.messages.length);
    expect(await redis.hget(k.cp, 'data')).not.toContain('message 0');
    const loaded = await store.load(runId);
    expect(loaded?.checkpoint).toEqual(cp2);

    // The next commit appends one message: what it sends does not grow with the thread.
    const reply = { id: 'a1', role: 'assistant' as const, content: 'ok', toolCalls: [] };
    const cp3 = { ...nextCheckpoint(cp2), messages: [...cp2.messages, reply] };
    const before = Number(/total_net_input_bytes:(\d+)/.exec(await redis.info('stats'))?.[1]);
    await store.commit(runId, 2, cp3, [], null, { fence: '', base: cp2 });
    const after = Number(/total_net_input_bytes:(\d+)/.exec(await redis.info('stats'))?.[1]);
    expect(after - before).toBeLessThan(
      2_048 + JSON.stringify(cp3).length - JSON.stringify(cp3.messages).length,
    );
    expect((await store.load(runId))?.checkpoint).toEqual(cp3);

    // A base whose messages are not a prefix (a rebase) rewrites the list.
    const rebased = { ...nextCheckpoint(cp3), messages: [reply] };
    await store.commit(runId, 3, rebased, [], null, { fence: '', base: cp3 });
    expect((await store.load(runId))?.checkpoint.messages).toEqual([reply]);
    expect(await redis.llen(k.messages)).toBe(1);
  });

  it('loads a checkpoint stored with its messages inside, and moves them to the list on commit', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const k = store.keys.run(runId);
    await store.create(run.checkpoint, run.events);
    // as an earlier version stored it
    await redis.hset(k.cp, 'data', JSON.stringify(run.checkpoint));
    await redis.del(k.messages);
    const loaded = await store.load(runId);
    expect(loaded?.checkpoint).toEqual(run.checkpoint);
    const cp2 = {
      ...nextCheckpoint(run.checkpoint),
      messages: [...run.checkpoint.messages, { id: 'x', role: 'user' as const, content: 'x' }],
    };
    // the base's messages are a prefix, but the list is empty: the store sends them all
    await store.commit(runId, 1, cp2, [], null, { fence: '', base: loaded!.checkpoint });
    expect(await redis.llen(k.messages)).toBe(cp2.messages.length);
    expect((await store.load(runId))?.checkpoint).toEqual(cp2);
  });

  it('matches MemoryRunStore event for event', async () => {
    const memory = new MemoryRunStore(() => clock);
    const run = createdRun();
    const cp2 = nextCheckpoint(run.checkpoint, { status: 'running' });
    const results = [];
    for (const s of [memory, store]) {
      const a = await s.create(run.checkpoint, run.events);
      const b = await s.commit(
        run.checkpoint.identity.runId,
        1,
        cp2,
        trickyBodies(1),
        'run_start_replay',
      );
      const c =
        s instanceof MemoryRunStore
          ? await s.append(run.checkpoint.identity.runId, 2, [textDelta(1, 'hi')])
          : await holderAppend(s, redis, run.checkpoint.identity.runId, [textDelta(1, 'hi')]);
      results.push(JSON.stringify([a, b, c]));
    }
    expect(results[1]).toBe(results[0]);
  });

  it('create fails with VersionConflictError when the run exists', async () => {
    const run = createdRun();
    await store.create(run.checkpoint, run.events);
    await expect(store.create(run.checkpoint, run.events)).rejects.toBeInstanceOf(
      VersionConflictError,
    );
    expect(await store.lastSeq(run.checkpoint.identity.runId)).toBe(run.events.length);
  });

  it('a commit with a stale version throws and changes nothing', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const k = store.keys.run(runId);
    await store.create(run.checkpoint, run.events);
    const cp2 = nextCheckpoint(run.checkpoint, { status: 'running' });
    await store.commit(runId, 1, cp2, [textDelta(1, 'a')], 'run_start_replay');
    const before = await redis.hgetall(k.cp);
    const streamLen = await redis.xlen(k.events);

    await expect(
      store.commit(runId, 1, nextCheckpoint(cp2), [textDelta(2, 'b')], 'assistant_turn_committed'),
    ).rejects.toThrow(VersionConflictError);
    // deltas are fenced on the lease, not the version: no lease, no write
    await expect(
      store.appendDeltas(
        runId,
        'not-the-holder',
        {
          step: 2,
          nonce: 'x',
          reset: { type: 'inference.reset', step: 2, messageId: 'm' },
          index: 0,
        },
        [textDelta(2, 'b')],
      ),
    ).rejects.toThrow(LeaseLostError);
    await expect(
      store.commit(
        'missing',
        1,
        { ...cp2, identity: { ...cp2.identity, runId: 'missing' } },
        [],
        null,
      ),
    ).rejects.toThrow(/store has nothing/);

    expect(await redis.hgetall(k.cp)).toEqual(before);
    expect(await redis.xlen(k.events)).toBe(streamLen);
    expect((await store.load(runId))?.version).toBe(2);
    expect(await store.lastTrigger(runId)).toBe('run_start_replay');
  });

  it('exactly one of 20 concurrent commits with the same expected version wins', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    const racers = Array.from({ length: 20 }, (_, i) =>
      store.commit(
        runId,
        1,
        nextCheckpoint(run.checkpoint, { step: 100 + i }),
        [textDelta(i, `r${i}`)],
        'assistant_turn_committed',
      ),
    );
    const settled = await Promise.allSettled(racers);
    const won = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [i] : []));
    expect(won).toHaveLength(1);
    for (const s of settled)
      if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(VersionConflictError);
    const loaded = await store.load(runId);
    expect(loaded?.version).toBe(2);
    expect(loaded?.checkpoint.step).toBe(100 + won[0]!);
    const events = await store.readEvents(runId);
    expect(events.map((e) => e.seq)).toEqual(
      Array.from({ length: run.events.length + 1 }, (_, i) => i + 1),
    );
    expect(events.at(-1)).toMatchObject({ type: 'text.delta', delta: `r${won[0]}` });
  });

  it('seq is gapless and unique across create, commit and append; readEvents pages', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const all: RunEvent[] = [...(await store.create(run.checkpoint, run.events)).events];
    let cp = run.checkpoint;
    let version = 1;
    for (let i = 0; i < 10; i += 1) {
      all.push(
        ...(await holderAppend(store, redis, runId, [textDelta(i, 'x'), textDelta(i, 'y')])),
      );
      cp = nextCheckpoint(cp, { status: 'running' });
      const r = await store.commit(
        runId,
        version,
        cp,
        i % 3 === 0 ? [] : trickyBodies(i),
        'tool_results_committed',
      );
      version = r.version;
      all.push(...r.events);
    }
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(await store.readEvents(runId)).toEqual(all);
    expect(await store.readEvents(runId, 5, 3)).toEqual(all.slice(5, 8));
    expect(await store.readEvents(runId, all.length)).toEqual([]);
    expect(await store.lastSeq(runId)).toBe(all.length);
    expect(version).toBe(11);
  });

  it('events read back equal what commit returned and what a subscriber received, empty arrays/objects included', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const received: string[] = [];
    const channel = store.keys.channel(runId);
    const onMessage = (ch: string, msg: string): void => {
      if (ch === channel) received.push(msg);
    };
    sub.on('smessage', onMessage);
    await sub.ssubscribe(channel);
    try {
      const returned: RunEvent[] = [...(await store.create(run.checkpoint, run.events)).events];
      const committed = await store.commit(
        runId,
        1,
        nextCheckpoint(run.checkpoint, { status: 'running' }),
        trickyBodies(1),
        'run_start_replay',
      );
      returned.push(...committed.events);
      returned.push(...(await holderAppend(store, redis, runId, [textDelta(1, '')])));

      // the bodies round-trip unchanged (no {} for [] and vice versa)
      const bodies = committed.events.map(
        ({ seq: _s, runId: _r, threadId: _t, turnId: _u, at: _a, ...body }) => body,
      );
      expect(bodies).toEqual(trickyBodies(1));
      expect(JSON.stringify(committed.events[0])).toContain('"patches":[]');
      expect(JSON.stringify(committed.events[1])).toContain('"arguments":{}');

      const read = await store.readEvents(runId);
      expect(read).toEqual(returned);
      // one message and one stream entry per write: an object for one event, an array for more
      await expect.poll(() => received.length).toBe(3);
      expect(received.flatMap((m) => decodeEventPayload(m))).toEqual(returned);
      expect(received.map((m) => m.startsWith('['))).toEqual([
        run.events.length > 1,
        committed.events.length > 1,
        false,
      ]);
      const raw = await redis.xrange(store.keys.run(runId).events, '-', '+');
      expect(raw.map(([id, fields]) => [id, fields[1]])).toEqual(
        received.map((json) => [`0-${decodeEventPayload(json).at(-1)?.seq ?? -1}`, json]),
      );
      // a reader resuming inside a batch gets exactly the events after its cursor
      for (let after = 0; after <= returned.length; after += 1) {
        expect(await store.readEvents(runId, after)).toEqual(returned.slice(after));
        expect(await store.readEvents(runId, after, 1)).toEqual(returned.slice(after, after + 1));
      }
    } finally {
      sub.off('smessage', onMessage);
      await sub.sunsubscribe(channel);
    }
  });

  it('keeps a done run for retentionSeconds only', async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const k = store.keys.run(runId);
    await store.create(run.checkpoint, run.events);
    await store.commit(
      runId,
      1,
      nextCheckpoint(run.checkpoint, { status: 'running' }),
      [textDelta(0, 'a')],
      'run_start_replay',
    );
    expect(await redis.ttl(k.cp)).toBe(-1);
    expect(await redis.ttl(k.events)).toBe(-1);
    await store.commit(
      runId,
      2,
      nextCheckpoint(run.checkpoint, { status: 'done' }),
      [textDelta(0, 'b')],
      'run_finished',
    );
    for (const key of [k.cp, k.events]) {
      const ttl = await redis.ttl(key);
      expect(ttl).toBeGreaterThan(3_590);
      expect(ttl).toBeLessThanOrEqual(3_600);
    }
  });

  it('a fenced commit that finishes and releases leaves no key of the run without its retention', async () => {
    for (const failed of [false, true]) {
      const run = createdRun();
      const runId = run.checkpoint.identity.runId;
      const k = store.keys.run(runId);
      await store.create(run.checkpoint, run.events);
      await redis.set(k.lease, 'tok', 'PX', 60_000);
      await redis.hset(k.results, 'call_1', '{}');
      await redis.set(k.parent, '{}');
      if (failed) await redis.sadd(k.failed, 'tool.x');
      await redis.hset(k.pending, 'ask', '1');
      const running = nextCheckpoint(run.checkpoint, { status: 'running' });
      // A release while someone asked for the run keeps the lease (renewed) and clears the mark.
      const kept = await store.commit(runId, 1, running, [], null, {
        fence: 'tok',
        releaseTtlMs: 5_000,
      });
      expect(kept.released).toBe(false);
      const done = await store.commit(
        runId,
        2,
        nextCheckpoint(running, { status: 'done' }),
        [textDelta(0, 'b')],
        'run_finished',
        { fence: 'tok', releaseTtlMs: 5_000 },
      );
      expect(done.released).toBe(true);
      expect(done.failedJobs).toEqual(failed ? ['tool.x'] : []);
      const all = [k.cp, k.events, k.lease, k.pending, k.results, k.parent, k.failed, k.messages];
      const present = [
        k.cp,
        k.events,
        k.results,
        k.parent,
        k.messages,
        ...(failed ? [k.failed] : []),
      ];
      for (const key of all) {
        const ttl = await redis.ttl(key);
        if (present.includes(key)) {
          expect(ttl, key).toBeGreaterThan(3_590);
          expect(ttl, key).toBeLessThanOrEqual(3_600);
        } else expect(ttl, key).toBe(-2);
      }
    }
  });

  it("writes a round's parent record with the commit, only when it succeeds", async () => {
    const run = createdRun();
    const runId = run.checkpoint.identity.runId;
    const k = store.keys.run(runId);
    await store.create(run.checkpoint, run.events);
    const record = JSON.stringify({ id: 'step.x', queue: 'bull:steps.a', step: 1 });
    const running = nextCheckpoint(run.checkpoint, { status: 'running' });
    // A stale version writes nothing, the record included.
    await expect(
      store.commit(runId, 7, running, [], null, { fence: '', parentRecord: record }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    expect(await redis.exists(k.parent)).toBe(0);
    await store.commit(runId, 1, running, [textDelta(0, 'a')], null, {
      fence: '',
      parentRecord: record,
    });
    expect(await redis.get(k.parent)).toBe(record);
    const ttl = await redis.pttl(k.parent);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
    // A commit without one leaves the record as it is.
    await store.commit(runId, 2, nextCheckpoint(running), [], null);
    expect(await redis.get(k.parent)).toBe(record);
  });

  it('the commit that finishes a run tells whether it has a webhook configuration', async () => {
    const finish = async (withWebhook: boolean): Promise<boolean | undefined> => {
      const run = createdRun();
      const runId = run.checkpoint.identity.runId;
      if (withWebhook) await redis.hset(store.keys.webhook(runId).config, 'tenant', 't');
      await store.create(run.checkpoint, run.events);
      const running = nextCheckpoint(run.checkpoint, { status: 'running' });
      const first = await store.commit(runId, 1, running, [], null);
      expect(first.webhook).toBeUndefined();
      const done = await store.commit(
        runId,
        2,
        nextCheckpoint(running, { status: 'done' }),
        [],
        null,
      );
      // The configuration keeps its own expiry (webhook-store.ts), not the run's retention.
      expect(await redis.ttl(store.keys.webhook(runId).config)).toBe(withWebhook ? -1 : -2);
      return done.webhook;
    };
    expect(await finish(true)).toBe(true);
    expect(await finish(false)).toBe(false);
  });

  it('loadForTenant hides runs of other tenants', async () => {
    const run = createdRun({ tenantId: 'acme' });
    const runId = run.checkpoint.identity.runId;
    await store.create(run.checkpoint, run.events);
    expect((await store.loadForTenant(runId, 'acme'))?.checkpoint).toEqual(run.checkpoint);
    expect(await store.loadForTenant(runId, 'globex')).toBeNull();
    expect(await store.loadForTenant('missing', 'acme')).toBeNull();
  });

  it('listRuns filters by status/agent/thread and pages newest first with an opaque cursor', async () => {
    const made: {
      runId: string;
      createdAt: number;
      agent: string;
      threadId: string;
      status: string;
    }[] = [];
    for (let i = 0; i < 13; i += 1) {
      const agent = i % 2 === 0 ? 'alpha' : 'beta';
      const threadId = i % 3 === 0 ? 'th-x' : 'th-y';
      // two runs share each createdAt, so the cursor must break ties by runId
      const createdAt = 10_000 + Math.floor(i / 2);
      const run = createdRun(
        { agent, threadId, runId: `run-${String(i).padStart(2, '0')}` },
        createdAt,
      );
      await store.create(run.checkpoint, run.events);
      let status = 'created';
      if (i % 4 === 0) {
        await store.commit(
          run.checkpoint.identity.runId,
          1,
          nextCheckpoint(run.checkpoint, { status: 'running' }),
          [],
          null,
        );
        status = 'running';
      }
      made.push({ runId: run.checkpoint.identity.runId, createdAt, agent, threadId, status });
    }
    const other = createdRun({ tenantId: 'other' });
    await store.create(other.checkpoint, other.events);

    const expected = [...made]
      .sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : -1))
      .map((r) => r.runId);
    const pageAll = async (
      q: { status?: 'running' | 'created'; agent?: string; threadId?: string },
      limit: number,
    ) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await store.listRuns({ tenantId: 'tenant-a', ...q, cursor, limit });
        expect(page.runs.length).toBeLessThanOrEqual(limit);
        ids.push(...page.runs.map((r) => r.runId));
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor !== null && pages < 50);
      return ids;
    };

    expect(await pageAll({}, 100)).toEqual(expected);
    expect(await pageAll({}, 4)).toEqual(expected);
    expect(await pageAll({}, 1)).toEqual(expected);
    const byStatus = made.filter((r) => r.status === 'running').map((r) => r.runId);
    expect(new Set(await pageAll({ status: 'running' }, 2))).toEqual(new Set(byStatus));
    expect(await pageAll({ agent: 'beta' }, 3)).toEqual(
      expected.filter((id) => made.find((r) => r.runId === id)!.agent === 'beta'),
    );
    expect(await pageAll({ threadId: 'th-x', agent: 'alpha' }, 2)).toEqual(
      expected.filter((id) => {
        const r = made.find((m) => m.runId === id)!;
        return r.threadId === 'th-x' && r.agent === 'alpha';
      }),
    );
    const first = await store.listRuns({ tenantId: 'tenant-a', limit: 13 });
    expect(first.nextCursor).toBeNull();
    expect(first.runs[0]).toEqual({
      runId: expected[0],
      tenantId: 'tenant-a',
      agent: made.find((r) => r.runId === expected[0])!.agent,
      threadId: made.find((r) => r.runId === expected[0])!.threadId,
      status: made.find((r) => r.runId === expected[0])!.status,
      createdAt: 10_006,
      // run-12 was committed once (nextCheckpoint bumps updatedAt)
      updatedAt: 10_007,
    });
    expect(
      (await store.listRuns({ tenantId: 'other', limit: 10 })).runs.map((r) => r.runId),
    ).toEqual([other.checkpoint.identity.runId]);
    await expect(
      store.listRuns({ tenantId: 'tenant-a', cursor: 'garbage!', limit: 5 }),
    ).rejects.toBeInstanceOf(InvalidCursorError);
    // JSON of the right shape that no page handed out, and the archive's columns would refuse
    // (bigint created_at, text run_id): refused here, on both list paths alike.
    for (const forged of [
      [1.5, 'x'],
      [-1e308, ''],
      [2 ** 63, 'x'],
      [-1, 'x'],
      [1, 'a\0b'],
    ]) {
      const cursor = Buffer.from(JSON.stringify(forged)).toString('base64url');
      await expect(
        store.listRuns({ tenantId: 'tenant-a', cursor, limit: 5 }),
        JSON.stringify(forged),
      ).rejects.toBeInstanceOf(InvalidCursorError);
    }
  });

  it('listRuns drops index entries of expired runs', async () => {
    const a = createdRun({}, 1);
    const b = createdRun({}, 2);
    await store.create(a.checkpoint, a.events);
    await store.create(b.checkpoint, b.events);
    await redis.del(
      store.keys.run(a.checkpoint.identity.runId).cp,
      store.keys.run(a.checkpoint.identity.runId).events,
    );
    const page = await store.listRuns({ tenantId: 'tenant-a', limit: 10 });
    expect(page.runs.map((r) => r.runId)).toEqual([b.checkpoint.identity.runId]);
    expect(await redis.zcard(store.keys.tenantRuns('tenant-a'))).toBe(1);
  });
});
