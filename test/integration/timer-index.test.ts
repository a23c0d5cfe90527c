/**
 * The shared timer index on a real Redis (timers/timer-index.ts, timer-sweeper.ts): an entry is
 * claimed by one sweeper at a time, comes back when its claimer died (its claim expired), is left
 * alone by an ack when it was moved meanwhile, and each kind goes to its own handler; an idle
 * sweeper sweeps only when the change counter says a timer was scheduled.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pino } from 'pino';
import { BatonKeys, TimerIndex, TimerSweeper, type ClaimedTimer } from '@baton/runtime/internal';
import { testRedis, type AnyRedis } from '@baton/testing/redis-client';
import { testPrefix } from '@baton/testing/worker-harness';

let redis: AnyRedis;

beforeAll(() => {
  redis = testRedis(inject('redisUrl'));
});

afterAll(() => {
  redis.disconnect();
});

const ref = (runId: string, kind = 'deadline') => ({
  kind,
  tenantId: 't1',
  runId,
  callId: 'c1',
});

describe('TimerIndex', () => {
  it('one claimer at a time; a dead claimer’s entries come back when the claim expires', async () => {
    const index = new TimerIndex(redis, new BatonKeys(testPrefix()), 4);
    await index.schedule([
      { ...ref('r1'), due: 1_000 },
      { ...ref('r2'), due: 5_000 },
    ]);
    const key = index.keyOf('r1');
    const first = await index.claim(key, 2_000, 10, 1_000);
    const r1 = first.claimed.filter((t) => t.runId === 'r1');
    expect(r1.map((t) => t.due)).toEqual([1_000]);
    // Claimed: another sweeper at the same time finds nothing of it.
    expect((await index.claim(key, 2_000, 10, 1_000)).claimed.some((t) => t.runId === 'r1')).toBe(
      false,
    );
    // Its claimer died: once the claim expired, it is due again for whoever sweeps.
    const again = await index.claim(key, 3_500, 10, 1_000);
    expect(again.claimed.some((t) => t.runId === 'r1')).toBe(true);
    // The dead claimer's late ack settles nothing: the entry is the second claimer's now.
    await index.ack(r1.map((timer) => ({ timer, next: null })));
    expect(await index.dueOf(ref('r1'))).not.toBeNull();
    await index.ack(
      again.claimed.filter((t) => t.runId === 'r1').map((timer) => ({ timer, next: null })),
    );
    expect(await index.dueOf(ref('r1'))).toBeNull();
  });

  it('an ack leaves an entry that was moved while claimed (an escalation) where it was moved', async () => {
    const index = new TimerIndex(redis, new BatonKeys(testPrefix()), 1);
    await index.schedule([{ ...ref('r3'), due: 1_000 }]);
    const { claimed } = await index.claim(index.keyOf('r3'), 1_500, 10, 10_000);
    expect(claimed).toHaveLength(1);
    await index.schedule([{ ...ref('r3'), due: 9_000 }]);
    await index.ack(claimed.map((timer) => ({ timer, next: null })));
    expect(await index.dueOf(ref('r3'))).toBe(9_000);
    // cancel removes it; a retryAt re-scores it
    await index.cancel([ref('r3')]);
    expect(await index.dueOf(ref('r3'))).toBeNull();
  });

  it('the sweeper fires each kind through its handler and leaves a failed one claimed', async () => {
    const index = new TimerIndex(redis, new BatonKeys(testPrefix()), 2);
    let now = 10_000;
    const fired: ClaimedTimer[] = [];
    const sweeper = new TimerSweeper({
      index,
      now: () => now,
      logger: pino({ level: 'silent' }),
      intervalMs: 1_000,
      batch: 2,
      leaseMs: 500,
    })
      .on('deadline', async (t) => {
        fired.push(t);
        return 'done';
      })
      .on('event-timeout', async (t) => {
        fired.push(t);
        return { retryAt: 20_000 };
      })
      .on('boom', async () => {
        throw new Error('handler failed');
      });
    await index.schedule([
      ...['a', 'b', 'c', 'd', 'e'].map((r) => ({ ...ref(r), due: 9_000 })),
      { ...ref('f', 'event-timeout'), due: 9_500 },
      { ...ref('g', 'boom'), due: 9_500 },
      { ...ref('h'), due: 11_000 },
    ]);
    expect(await sweeper.sweep()).toBe(7);
    expect(fired.map((t) => t.runId).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(await index.dueOf(ref('a'))).toBeNull();
    expect(await index.dueOf(ref('f', 'event-timeout'))).toBe(20_000);
    expect(await index.dueOf(ref('g', 'boom'))).toBeGreaterThan(now);
    expect(await index.dueOf(ref('h'))).toBe(11_000);
    now = 11_000;
    expect(await sweeper.sweep()).toBe(2); // h, and g once its claim expired
    expect(await index.size()).toBe(2); // f (retry at 20 s) and g (failed again)
  });

  it('an idle sweeper sweeps only when a schedule moved the counter, then fires on time', async () => {
    const index = new TimerIndex(redis, new BatonKeys(testPrefix()), 4);
    const fired = new Map<string, number>();
    const sweeper = new TimerSweeper({
      index,
      now: () => Date.now(),
      logger: pino({ level: 'silent' }),
      intervalMs: 50,
      fullSweepMs: 60_000,
      batch: 10,
      leaseMs: 1_000,
    }).on('deadline', async (t) => {
      fired.set(t.runId, Date.now());
      return 'done';
    });
    sweeper.start();
    try {
      await new Promise((r) => setTimeout(r, 150)); // its first sweep (nothing read yet)
      // Written behind the counter's back: an idle sweeper must not find it by sweeping.
      const quiet = JSON.stringify(['deadline', 't1', 'quiet', 'c1']);
      await redis.zadd(index.keyOf('quiet'), Date.now() - 1, quiet);
      await new Promise((r) => setTimeout(r, 300));
      expect(fired.size).toBe(0);
      const due = Date.now() + 100;
      await index.schedule([{ ...ref('loud'), due }]);
      for (let i = 0; i < 40 && fired.size < 2; i += 1) await new Promise((r) => setTimeout(r, 25));
      expect([...fired.keys()].sort()).toEqual(['loud', 'quiet']);
      expect(fired.get('loud')).toBeGreaterThanOrEqual(due);
      expect(fired.get('loud')).toBeLessThan(due + 500);
    } finally {
      await sweeper.stop();
    }
  });
});
