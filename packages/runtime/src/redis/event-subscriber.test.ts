import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { EventBody, RunEvent } from '@baton/protocol';
import { uniquePrefix } from '@baton/testing/redis';
import {
  createdRun,
  holderAppend,
  nextCheckpoint,
  textDelta,
  trickyBodies,
} from '@baton/testing/redis-runs';
import { RedisRunStore } from '../run-record/redis-run-store.ts';
import { RunEventSubscriber } from './event-subscriber.ts';

const url = inject('redisUrl');
const redis = new Redis(url, { maxRetriesPerRequest: 1 });
const subscribers: RunEventSubscriber[] = [];
const connections: Redis[] = [redis];

afterAll(async () => {
  await Promise.all(subscribers.map((s) => s.close()));
  await Promise.all(connections.map((c) => c.quit().catch(() => undefined)));
});

let store: RedisRunStore;
let prefix: string;
let clock = 1_000;

beforeEach(() => {
  prefix = uniquePrefix('sub');
  store = new RedisRunStore({ redis, prefix, now: () => clock++ });
});

function newSubscriber(errors: unknown[] = []): RunEventSubscriber {
  const s = new RunEventSubscriber({
    redis,
    source: store,
    onError: (err) => errors.push(err),
  });
  subscribers.push(s);
  return s;
}

/** Creates a run and returns a writer that commits/appends until the run has `total` events. */
async function startRun(): Promise<{
  runId: string;
  write: (total: number) => Promise<RunEvent[]>;
}> {
  const run = createdRun();
  const runId = run.checkpoint.identity.runId;
  const created = await store.create(run.checkpoint, run.events);
  const log: RunEvent[] = [...created.events];
  let cp = run.checkpoint;
  let version = created.version;
  const write = async (total: number): Promise<RunEvent[]> => {
    let i = 0;
    while (log.length < total) {
      i += 1;
      const room = total - log.length;
      if (i % 3 === 0) {
        const bodies: EventBody[] = Array.from({ length: Math.min(room, 1 + (i % 4)) }, (_, j) =>
          textDelta(i, `d${j}`),
        );
        log.push(...(await holderAppend(store, redis, runId, bodies)));
      } else {
        const bodies = trickyBodies(i).slice(0, Math.min(room, 1 + (i % 5)));
        cp = nextCheckpoint(cp, { status: 'running' });
        const r = await store.commit(runId, version, cp, bodies, 'tool_results_committed');
        version = r.version;
        log.push(...r.events);
      }
      if (i % 2 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return log;
  };
  return { runId, write };
}

function collector(): { events: RunEvent[]; onEvent: (e: RunEvent) => void } {
  const events: RunEvent[] = [];
  return { events, onEvent: (e) => void events.push(e) };
}

describe('RunEventSubscriber', () => {
  it('delivers every event exactly once, in order, while commits run concurrently (subscribed mid-way)', async () => {
    const sub = newSubscriber();
    const { runId, write } = await startRun();
    const writing = write(200);
    // wait until the writer is well under way, then subscribe from an earlier point
    await expect.poll(() => store.lastSeq(runId), { interval: 1 }).toBeGreaterThanOrEqual(60);
    const a = collector();
    const b = collector();
    let finished = false;
    void writing.then(() => (finished = true));
    const [unsubA, unsubB] = await Promise.all([
      sub.subscribe(runId, 40, a.onEvent),
      sub.subscribe(runId, 0, b.onEvent),
    ]);
    expect(finished).toBe(false); // the backlog was read while commits were still happening
    const log = await writing;
    expect(log).toHaveLength(200);
    await expect.poll(() => a.events.length).toBe(160);
    await expect.poll(() => b.events.length).toBe(200);
    expect(a.events).toEqual(log.slice(40));
    expect(b.events).toEqual(log);
    await unsubA();
    await unsubB();
    expect(sub.activeChannels).toBe(0);
  });

  it('many subscribers joining at random points all see a gapless sequence', async () => {
    const sub = newSubscriber();
    const { runId, write } = await startRun();
    const writing = write(200);
    const joined: {
      after: number;
      c: ReturnType<typeof collector>;
      unsub: Promise<() => Promise<void>>;
    }[] = [];
    for (let i = 0; i < 8; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      const after = Math.max(0, (await store.lastSeq(runId)) - 5);
      const c = collector();
      joined.push({ after, c, unsub: sub.subscribe(runId, after, c.onEvent) });
    }
    const log = await writing;
    for (const j of joined) {
      await expect.poll(() => j.c.events.length).toBe(200 - j.after);
      expect(j.c.events).toEqual(log.slice(j.after));
      await (
        await j.unsub
      )();
    }
    expect(sub.activeChannels).toBe(0);
  });

  it('fills a gap from the stream and drops duplicates of live messages', async () => {
    const sub = newSubscriber();
    const { runId, write } = await startRun();
    const log = await write(5);
    const c = collector();
    const unsub = await sub.subscribe(runId, 0, c.onEvent);
    expect(c.events).toEqual(log);

    // write 6..8 to the stream without publishing, then publish only 8 (and a stale duplicate)
    const k = store.keys.run(runId);
    const extra = [6, 7, 8].map((seq) => ({
      ...log[0]!,
      seq,
      type: 'text.delta',
      step: 9,
      messageId: 'm',
      delta: `s${seq}`,
    }));
    for (const e of extra) await redis.xadd(k.events, `0-${e.seq}`, 'e', JSON.stringify(e));
    await redis.hset(k.cp, 'seq', 8);
    await redis.spublish(k.channel, JSON.stringify(log[2]));
    await redis.spublish(k.channel, JSON.stringify(extra[2]));
    await expect.poll(() => c.events.length).toBe(8);
    expect(c.events).toEqual([...log, ...extra]);

    // and the next real commit continues from there
    const more = await holderAppend(store, redis, runId, [textDelta(10, 'after')]);
    expect(more[0]!.seq).toBe(9);
    await expect.poll(() => c.events.length).toBe(9);
    expect(c.events[8]).toEqual(more[0]);
    await unsub();
  });

  it('two subscribers on one run share one channel; unsubscribe cleans up', async () => {
    const sub = newSubscriber();
    const { runId, write } = await startRun();
    await write(3);
    const a = collector();
    const b = collector();
    const unsubA = await sub.subscribe(runId, 0, a.onEvent);
    const unsubB = await sub.subscribe(runId, 3, b.onEvent);
    expect(sub.activeChannels).toBe(1);
    const channel = store.channelOf(runId);
    const numsub = async (): Promise<number> =>
      Number(((await redis.pubsub('SHARDNUMSUB', channel)) as [string, number])[1]);
    const subscribed = 1;
    expect(await numsub()).toBe(subscribed);

    const log = await write(6);
    await expect.poll(() => b.events.length).toBe(3);
    expect(a.events).toEqual(log);
    expect(b.events).toEqual(log.slice(3));

    await unsubA();
    await unsubA(); // idempotent
    expect(sub.activeChannels).toBe(1);
    expect(await numsub()).toBe(subscribed);
    const log2 = await write(8);
    await expect.poll(() => b.events.length).toBe(5);
    expect(a.events).toHaveLength(6); // nothing after unsubscribe
    expect(b.events).toEqual(log2.slice(3));

    await unsubB();
    expect(sub.activeChannels).toBe(0);
    await expect.poll(numsub).toBe(0);

    // resubscribing right after the last unsubscribe works (UNSUBSCRIBE/SUBSCRIBE ordered on the connection)
    const c = collector();
    const unsubC = await sub.subscribe(runId, 8, c.onEvent);
    const log3 = await write(9);
    await expect.poll(() => c.events.length).toBe(1);
    expect(c.events).toEqual(log3.slice(8));
    await unsubC();
  });

  it('isolates listener errors and keeps delivering', async () => {
    const errors: unknown[] = [];
    const sub = newSubscriber(errors);
    const { runId, write } = await startRun();
    const seen: number[] = [];
    const unsub = await sub.subscribe(runId, 0, (e) => {
      seen.push(e.seq);
      if (e.seq === 2) throw new Error('boom');
    });
    await write(4);
    await expect.poll(() => seen.length).toBe(4);
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(errors).toHaveLength(1);
    await unsub();
  });

  it('catches up from the stream after the subscriber connection reconnects', async () => {
    const conn = new Redis(url, { maxRetriesPerRequest: 1 });
    connections.push(conn);
    const sub = new RunEventSubscriber({
      subscriber: conn,
      source: store,
    });
    subscribers.push(sub);
    await new Promise<void>((resolve) =>
      conn.status === 'ready' ? resolve() : conn.once('ready', () => resolve()),
    );
    const { runId, write } = await startRun();
    const c = collector();
    const unsub = await sub.subscribe(runId, 0, c.onEvent);
    const reconnected = new Promise<void>((resolve) => conn.once('ready', () => resolve()));
    conn.disconnect(true);
    const log = await write(30);
    await reconnected;
    await expect.poll(() => c.events.length).toBe(30);
    expect(c.events).toEqual(log);
    const log2 = await write(35);
    await expect.poll(() => c.events.length).toBe(35);
    expect(c.events).toEqual(log2);
    await unsub();
  });
});

/**
 * What Redis holds after a restart from an older past: the run's log lost its events after
 * `keep`, and (when `regrow`) other events took the same seqs, as a re-driven run writes them.
 * Written directly, without PUBLISH: a live subscriber hears nothing of it.
 */
async function rewindLog(runId: string, keep: number, regrow: boolean): Promise<void> {
  const k = store.keys.run(runId);
  const lost = await store.readEvents(runId, keep);
  // A stream never takes an id below its top one, even after XDEL: it is written anew.
  const kept = await redis.xrange(k.events, '-', `0-${String(keep)}`);
  await redis.del(k.events);
  for (const [id, fields] of kept) await redis.xadd(k.events, id, ...fields);
  await redis.hset(k.cp, 'seq', keep);
  if (!regrow) return;
  for (const event of lost)
    await redis.xadd(k.events, `0-${String(event.seq)}`, 'e', JSON.stringify({ ...event, at: 1 }));
  await redis.hset(k.cp, 'seq', lost.at(-1)?.seq ?? keep);
}

describe('RunEventSubscriber after Redis lost events', () => {
  async function reconnectingSubscriber(errors: unknown[] = []) {
    const conn = new Redis(url, { maxRetriesPerRequest: 1 });
    connections.push(conn);
    const sub = new RunEventSubscriber({
      subscriber: conn,
      source: store,
      onError: (err) => errors.push(err),
    });
    subscribers.push(sub);
    await new Promise<void>((resolve) =>
      conn.status === 'ready' ? resolve() : conn.once('ready', () => resolve()),
    );
    return { conn, sub };
  }

  it.each([
    { case: 'the log ends before what was delivered', regrow: false },
    { case: 'other events took the delivered seqs', regrow: true },
  ])(
    'tells the listener once, after the reconnect, and delivers nothing more: $case',
    async ({ regrow }) => {
      const { conn, sub } = await reconnectingSubscriber();
      const { runId, write } = await startRun();
      const c = collector();
      const told: unknown[] = [];
      const unsub = await sub.subscribe(runId, 0, c.onEvent, { onRewound: (r) => told.push(r) });
      await write(10);
      await expect.poll(() => c.events.length).toBe(10);

      await rewindLog(runId, 6, regrow);
      conn.disconnect(true);
      await expect.poll(() => told).toEqual([{ delivered: 10, lastSeq: regrow ? 10 : 6 }]);
      await write(14);
      // nothing of the new history reaches a listener that was told
      expect(c.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      await unsub();
    },
  );

  it('a log that kept everything delivered goes on after a reconnect, told nothing', async () => {
    const { conn, sub } = await reconnectingSubscriber();
    const { runId, write } = await startRun();
    const c = collector();
    const told: unknown[] = [];
    const unsub = await sub.subscribe(runId, 0, c.onEvent, { onRewound: (r) => told.push(r) });
    await write(10);
    await expect.poll(() => c.events.length).toBe(10);
    const reconnected = new Promise<void>((resolve) => conn.once('ready', () => resolve()));
    conn.disconnect(true);
    await reconnected;
    const log = await write(14);
    await expect.poll(() => c.events.length).toBe(14);
    expect(c.events).toEqual(log);
    expect(told).toEqual([]);
    await unsub();
  });

  it('without onRewound the rewind is an error report, and delivery goes on', async () => {
    const errors: unknown[] = [];
    const { conn, sub } = await reconnectingSubscriber(errors);
    const { runId, write } = await startRun();
    const c = collector();
    const unsub = await sub.subscribe(runId, 0, c.onEvent);
    await write(10);
    await expect.poll(() => c.events.length).toBe(10);
    await rewindLog(runId, 6, false);
    conn.disconnect(true);
    await expect
      .poll(() => errors.map((e) => (e as { code?: string }).code))
      .toEqual(['event_log_rewound']);
    await unsub();
  });
});

describe('RunEventSubscriber onMessage', () => {
  it('hands the live messages of the runs it follows to onMessage, decoded once for it and the listeners', async () => {
    const seen: { message: string; events: RunEvent[] }[] = [];
    const sub = new RunEventSubscriber({
      redis,
      source: store,
      onMessage: (message, decode) => seen.push({ message, events: decode() }),
    });
    subscribers.push(sub);
    const streamed = await startRun();
    const unstreamed = await startRun();
    const c = collector();
    const unsub = await sub.subscribe(streamed.runId, 0, c.onEvent);
    const before = c.events.length;
    const [log] = [await streamed.write(12), await unstreamed.write(7)];
    await expect.poll(() => c.events.length).toBe(12);
    expect(c.events).toEqual(log);
    const tapped = (runId: string): RunEvent[] =>
      seen.flatMap((m) => m.events).filter((e) => e.runId === runId);
    // Every event written after the subscription was heard live; nothing of a run not followed.
    await expect.poll(() => tapped(streamed.runId).length).toBe(12 - before);
    expect(tapped(streamed.runId)).toEqual(log.slice(before));
    expect(tapped(unstreamed.runId)).toEqual([]);
    // A live event is one object: decoded once for the tap and the listener.
    expect(c.events.at(-1)).toBe(tapped(streamed.runId).at(-1));
    await unsub();
  });
});
