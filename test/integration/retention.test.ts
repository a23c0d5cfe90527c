/**
 * Bounded memory: every key Baton writes has a lifetime. A burst of runs (sequential, parallel
 * with tool jobs, one with an approval), then the retention period: the Redis keys under the
 * prefix are back to what they were before the burst, and so is their memory. Deleting a run or
 * a thread removes it at once.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonError } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const TENANT = 't-retain';
let h: Harness;

beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), createDemoAgents(systemClock), {
    workers: 1,
    overrides: {
      EVENT_RETENTION_SECONDS: '2',
      THREAD_TTL_SECONDS: '2',
      JOB_RETENTION_SECONDS: '1',
      RECONCILE_INTERVAL_MS: '300',
    },
  });
});

afterAll(async () => {
  await h.stop();
});

const user = (content: string) => ({ messages: [{ role: 'user' as const, content }] });

/** Every key of this test's prefix (Baton's and BullMQ's) with its memory usage. */
async function keyspace(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const pattern of [`${h.prefix}:*`, `{${h.prefix}-bull}*`, `${h.prefix}-bull:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await h.client.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) out.set(key, (await h.client.redis.memory('USAGE', key)) ?? 0);
    } while (cursor !== '0');
  }
  return out;
}

/** Keys that come and go on their own (a scan lock, a cursor, BullMQ's stall bookkeeping). */
const TRANSIENT = /(reconciler:lock|reconciler:waiting-cursor|stalled-check|:stalled)$/;

async function runOne(agent: string, content: string): Promise<string> {
  const created = await h.client.service.createRun(TENANT, { agent, input: user(content) });
  const cp = await waitForStatus(h, created.runId, ['done', 'waiting'], 30_000);
  if (cp.status === 'waiting') {
    const call = Object.values(cp.calls).find((c) => c.status === 'suspended')!;
    await h.client.service.submitDecisions(TENANT, created.runId, [
      { toolCallId: call.id, action: 'resume' },
    ]);
    await waitForStatus(h, created.runId, ['done'], 30_000);
  }
  return created.runId;
}

describe('retention', () => {
  it('after a burst and the retention period, the keyspace is back to its base', async () => {
    // Warm-up: BullMQ's per-queue keys (meta, id counters, its capped event stream) exist from
    // the first job on, and each agent has its own queues: one run of every agent of the burst
    // makes them the base, like the agent adverts.
    await runOne('parallel-assistant', 'weather in Kyiv?');
    await runOne('assistant', 'weather in Oslo?');
    const quiet = async (): Promise<Map<string, number> | null> => {
      const keys = await keyspace();
      // Nothing of a run may remain: its keys, its thread, the indexes that point at it.
      const live = [...keys.keys()].filter(
        (k) =>
          !TRANSIENT.test(k) && /\{run:|\{thread:|\{tenant:|:runs:(gc|active|waiting)$/.test(k),
      );
      // The deployment's event-metrics hash (one, bounded) appears at the first flush after the
      // warm-up's events: part of the base, like the agent adverts.
      return live.length === 0 && keys.has(h.client.keys.eventMetrics) ? keys : null;
    };
    const base = await waitFor(quiet, 20_000, 'the warm-up run to expire');
    const baseBytes = [...base.entries()]
      .filter(([k]) => !TRANSIENT.test(k))
      .reduce((sum, [, bytes]) => sum + bytes, 0);

    const runs = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => runOne('assistant', `weather in city ${i}?`)),
      ...Array.from({ length: 40 }, (_, i) => runOne('parallel-assistant', `weather ${i}?`)),
      ...Array.from({ length: 20 }, () => runOne('assistant', 'deploy please')),
    ]);
    expect(runs).toHaveLength(100);
    const during = await keyspace();
    expect([...during.keys()].filter((k) => k.includes('{run:')).length).toBeGreaterThan(100);

    const after = await waitFor(
      async () => {
        const keys = await keyspace();
        const extra = [...keys.keys()].filter((k) => !base.has(k) && !TRANSIENT.test(k));
        return extra.length === 0 ? keys : null;
      },
      30_000,
      'every key of the burst to expire',
    );
    const afterBytes = [...after.entries()]
      .filter(([k]) => !TRANSIENT.test(k))
      .reduce((sum, [, bytes]) => sum + bytes, 0);
    const peakBytes = [...during.values()].reduce((sum, bytes) => sum + bytes, 0);
    console.info(
      `[retention] base ${base.size} keys / ${baseBytes} B; peak ${during.size} keys / ${peakBytes} B (${Math.round((peakBytes - baseBytes) / runs.length)} B per finished run); after ${after.size} keys / ${afterBytes} B`,
    );
    // Same keys; memory within what the capped BullMQ event streams and hash encodings vary by.
    expect(afterBytes).toBeLessThan(baseBytes + 64 * 1024);
    // The tenant's index is empty again (its key is gone).
    expect(await h.client.redis.exists(h.client.keys.tenantRuns(TENANT))).toBe(0);
  });

  it('DELETE of a finished run and of a thread removes them at once; a live run is refused', async () => {
    const svc = h.client.service;
    const done = await svc.createRun(TENANT, { agent: 'assistant', input: user('weather?') });
    await waitForStatus(h, done.runId, ['done']);
    const live = await svc.createRun(TENANT, {
      agent: 'assistant',
      threadId: 'thread-to-delete',
      input: user('deploy please'),
    });
    await waitForStatus(h, live.runId, ['waiting']);

    const refusal = await svc.deleteRun(TENANT, live.runId).catch((e: unknown) => e);
    expect((refusal as BatonError).code).toBe('run_active');
    const busy = await svc.deleteThread(TENANT, 'thread-to-delete').catch((e: unknown) => e);
    expect((busy as BatonError).code).toBe('thread_busy');
    // Another tenant's run is not found, exactly like a missing one.
    expect(
      ((await svc.deleteRun('other', done.runId).catch((e: unknown) => e)) as BatonError).code,
    ).toBe('run_not_found');

    await svc.deleteRun(TENANT, done.runId);
    expect(await h.client.store.load(done.runId)).toBeNull();
    expect(await h.client.store.readEvents(done.runId)).toEqual([]);
    const page = await svc.listRuns({ tenantId: TENANT, limit: 100 });
    expect(page.runs.map((r) => r.runId)).not.toContain(done.runId);

    await svc.cancel(TENANT, live.runId);
    await waitForStatus(h, live.runId, ['done']);
    await waitFor(
      async () =>
        (await h.client.threads.load(TENANT, 'thread-to-delete')).activeRunId === null
          ? true
          : null,
      10_000,
      'the thread to be released',
    );
    expect(await svc.deleteThread(TENANT, 'thread-to-delete')).toEqual({ runs: 1 });
    expect(await h.client.store.load(live.runId)).toBeNull();
    const thread = await h.client.threads.load(TENANT, 'thread-to-delete');
    expect(thread.runIds).toEqual([]);
    expect(thread.messages).toEqual([]);
    expect(
      ((await svc.deleteThread(TENANT, 'thread-to-delete').catch((e: unknown) => e)) as BatonError)
        .code,
    ).toBe('not_found');
  });
});
