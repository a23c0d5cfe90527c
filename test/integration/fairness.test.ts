/**
 * Priorities, fairness keys and their weights, over real queues (docs/fairness.md): a flooding
 * tenant no longer delays another's run by its backlog's length, weighted keys share the workers
 * by their weights, a priority-1 run overtakes a priority-3 backlog.
 */
import {
  ScriptedModel,
  defineTool,
  toolResult,
  type AgentDefinition,
  type ScriptedTurn,
} from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import type { CreateRunRequest, CreateRunResponse, RunPage } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { DEFAULT_WINDOW } from '@baton/runtime/internal';
import { Job } from 'bullmq';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ApiClient, KEYS, startApiCluster } from '@baton/testing/api-harness';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';

const [assistant] = createDemoAgents(systemClock);
/**
 * A default deployment: no BATON_FAIRNESS (admission on, DEFAULT_WINDOW per key) and the
 * worker's own default concurrencies, not the harness' pinned 16.
 */
const DEFAULTS = {
  WORKER_CONCURRENCY: undefined,
  TOOL_CONCURRENCY: undefined,
} as unknown as Record<string, string>;

/** One round calling a tool that sleeps `NAP_MS`, then an answer: every run takes as long. */
const NAP_MS = 120;
const napper: AgentDefinition = {
  name: 'napper',
  model: new ScriptedModel((request): ScriptedTurn =>
    request.messages.some((m) => m.role === 'tool')
      ? { text: 'rested' }
      : { toolCalls: [{ name: 'nap', arguments: {} }] },
  ),
  tools: [
    defineTool({
      name: 'nap',
      description: 'sleeps a little',
      inputSchema: z.object({}),
      execute: async () => {
        await systemClock.sleep(NAP_MS);
        return toolResult.success({ ok: true });
      },
    }),
  ],
  executionMode: 'sequential',
};

function ask(agent: string, text: string, options: CreateRunRequest['options'] = {}) {
  return { agent, input: { messages: [{ role: 'user' as const, content: text }] }, options };
}

/** Creates `n` runs, `parallel` requests at a time (as many clients would). */
async function flood(
  h: Harness,
  tenant: string,
  n: number,
  request: CreateRunRequest,
  parallel = 25,
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(parallel, n - i) }, () =>
        h.client.service.createRun(tenant, request),
      ),
    );
    ids.push(...batch.map((c) => c.runId));
  }
  return ids;
}

/**
 * The runs a lone key's tenant may have in progress on this pool (docs/fairness.md,
 * "Borrowing"): the worker's advertised step slots less one window.
 */
async function borrowLimit(h: Harness): Promise<number> {
  const adverts = await h.client.redis.hvals(h.client.keys.workerCapacity);
  const slots = adverts.reduce((sum, v) => sum + Number(v.split('\t')[0]), 0);
  expect(slots).toBeGreaterThan(DEFAULT_WINDOW);
  return slots - DEFAULT_WINDOW;
}

async function startedAt(h: Harness, runId: string): Promise<number> {
  const events = await h.client.store.readEvents(runId);
  const started = events.find((e) => e.type === 'run.started');
  if (!started) throw new Error(`run ${runId} has not started`);
  return started.at;
}

describe('fairness', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("by default, a flooding tenant's 400 slow runs do not hold back another tenant's run", async () => {
    h = await startHarness(inject('redisUrl'), [assistant!], { overrides: DEFAULTS });
    const harness = h;
    // The run queue is paused while the flood is created (the worker stays live, so admission
    // applies): no slot can free, so the backlog it leaves is exact whatever the machine's
    // speed (the worker draining it meanwhile made the position below depend on timing).
    const queues = harness.client.queues.shardQueues('default');
    await Promise.all(queues.map((q) => q.pause()));
    const flooded = await flood(harness, 'tenant-a', 400, ask('assistant', 'report on uptime'));
    // Their snapshot says why they wait and where they stand: the key's window holds the first
    // runs, the next borrow the idle slots the pool has beyond one window (borrowed runs hold no
    // window slot: the key's inProgress stays its window), the rest wait in its backlog (the last
    // batch's 25 requests arrive in any order).
    const inFlight = await borrowLimit(harness);
    const last = await harness.client.service.load('tenant-a', flooded.at(-1)!);
    const queued = await harness.client.service.queuedInfo(last.checkpoint.identity);
    expect(queued).toMatchObject({
      reason: 'fairness_key_limit',
      limit: DEFAULT_WINDOW,
      inProgress: DEFAULT_WINDOW,
      backlog: 400 - inFlight,
    });
    expect(queued!.position).toBeGreaterThan(400 - inFlight - 25);
    expect(queued!.backlog).toBeGreaterThanOrEqual(queued!.position);
    // Now the worker takes A's runs, and B's run arrives behind them.
    await Promise.all(queues.map((q) => q.resume()));
    const t0 = Date.now();
    const { runId } = await harness.client.service.createRun(
      'tenant-b',
      ask('assistant', 'what is the weather in Oslo'),
    );
    const done = await waitForStatus(harness, runId, ['done'], 20_000);
    const latency = Date.now() - t0;
    expect(done.termination).toEqual({ kind: 'natural_end' });
    expect(latency).toBeLessThanOrEqual(3_000);
    // A's runs were still queued meanwhile: most of them have not even started.
    let finished = 0;
    for (const id of flooded)
      if ((await harness.client.store.meta(id))?.status === 'done') finished += 1;
    expect(finished).toBeLessThan(200);
    // The waiting ones hold no job: A's jobs in the queue are at most its runs in progress, its
    // window and what it borrowed (a step job or a tool job each), which leave the pool one
    // window of free slots: B's step never waited for a slot.
    const counts = await queues[0]!.getJobCounts('wait', 'prioritized', 'active', 'delayed');
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(inFlight);
    // The last run (fewer than 200 done, it is still queued) still says why, and has moved up.
    const later = await harness.client.service.queuedInfo(last.checkpoint.identity);
    expect(later).toMatchObject({ reason: 'fairness_key_limit', limit: DEFAULT_WINDOW });
    expect(later!.position).toBeGreaterThanOrEqual(1);
    expect(later!.position).toBeLessThanOrEqual(queued!.position);
    expect(later!.backlog).toBeGreaterThanOrEqual(later!.position);
  }, 60_000);

  it("a tenant minting a fairness key per run holds no more than its tenant window and what it borrowed; another tenant's run is not held back; no state per key is left", async () => {
    h = await startHarness(inject('redisUrl'), [assistant!], { overrides: DEFAULTS });
    const harness = h;
    const created: { runId: string; queued?: { reason: string } }[] = [];
    for (let i = 0; i < 400; i += 25)
      created.push(
        ...(await Promise.all(
          Array.from({ length: 25 }, (_, j) =>
            harness.client.service.createRun(
              'tenant-m',
              ask('assistant', 'report on uptime', { fairnessKey: `user-${String(i + j)}` }),
            ),
          ),
        )),
      );
    const minted = created.map((c) => c.runId);
    const tenantRow = async () =>
      (await harness.client.admission.stats()).find(
        (s) => s.tenantId === 'tenant-m' && s.key === '*',
      );
    // Every key had room; the tenant did not: the rest wait, and say why.
    const parked = created.filter((c) => c.queued !== undefined);
    expect(parked.length).toBeGreaterThan(200);
    for (const c of parked) expect(c.queued?.reason).toBe('tenant_limit');
    const row = await tenantRow();
    // The first of them, alone, borrowed the pool's idle slots beyond one window; once a key
    // waits, borrowing stops and the tenant's window binds (borrowed runs finish their runs).
    const inFlight = await borrowLimit(harness);
    expect(row?.limit).toBe(DEFAULT_WINDOW);
    expect(row?.inProgress).toBeLessThanOrEqual(inFlight);
    expect(row?.backlog).toBeGreaterThan(200);
    const other = await harness.client.service.createRun(
      'tenant-n',
      ask('assistant', 'what is the weather in Oslo'),
    );
    expect(other.queued).toBeUndefined();
    await waitForStatus(harness, other.runId, ['done'], 20_000);
    let finished = 0;
    for (const id of minted)
      if ((await harness.client.store.meta(id))?.status === 'done') finished += 1;
    expect(finished).toBeLessThan(200);
    // The minted keys are one tenant's total in the stats (and /metrics), not 400 rows.
    expect(
      (await harness.client.admission.stats()).filter((s) => s.tenantId === 'tenant-m'),
    ).toHaveLength(1);
    // Never more in progress than that, until every run is done.
    for (const id of minted) {
      expect((await tenantRow())!.inProgress).toBeLessThanOrEqual(inFlight);
      await waitForStatus(harness, id, ['done'], 60_000);
    }
    expect(await tenantRow()).toMatchObject({ inProgress: 0, backlog: 0, dispatched: 400 });
    // Nothing is kept per key once its runs are done.
    const { redis, keys } = harness.client;
    const fair = await redis.keys(`${keys.prefix}:{fair:tenant-m}:*`);
    expect(fair.filter((k) => k.includes(':q:'))).toEqual([]);
    expect(await redis.hlen(`${keys.prefix}:{fair:tenant-m}:busy`)).toBe(0);
    expect(await redis.hkeys(`${keys.prefix}:{fair:tenant-m}:dispatched`)).toEqual(['*']);
  }, 120_000);

  for (const variant of [
    { binds: 'their windows', window: 3, tenantWindow: 9 },
    { binds: "their tenant's window (the default, = window)", window: 6 },
  ])
    it(`two flooding keys with weights 2:1 get dispatch shares of 2:1 (±10 %) when ${variant.binds} bind`, async () => {
      const { window } = variant;
      const fairness = {
        window,
        ...(variant.tenantWindow === undefined ? {} : { tenantWindow: variant.tenantWindow }),
        tenants: { '*': { weights: { heavy: 2, light: 1 } } },
      };
      h = await startHarness(inject('redisUrl'), [napper], {
        overrides: { BATON_FAIRNESS: JSON.stringify(fairness) },
      });
      const harness = h;
      const heavy = flood(harness, 'tenant-w', 150, ask('napper', 'x', { fairnessKey: 'heavy' }));
      const light = flood(harness, 'tenant-w', 150, ask('napper', 'x', { fairnessKey: 'light' }));
      const [heavyIds, lightIds] = await Promise.all([heavy, light]);
      // While both keys have a backlog: until one third of the heavy key's runs are done.
      const doneOf = async (ids: string[]): Promise<number> => {
        let n = 0;
        for (const id of ids) if ((await harness.client.store.meta(id))?.status === 'done') n += 1;
        return n;
      };
      await waitFor(async () => (await doneOf(heavyIds)) >= 100, 60_000, '100 heavy runs done');
      const stats = await harness.client.admission.stats();
      const of = (key: string) => stats.find((s) => s.key === key)!;
      expect(of('heavy').limit).toBe(2 * window);
      expect(of('light').limit).toBe(window);
      expect(of('*').limit).toBe(variant.tenantWindow ?? window);
      const ratio = of('heavy').dispatched / of('light').dispatched;
      expect(ratio).toBeGreaterThanOrEqual(1.8);
      expect(ratio).toBeLessThanOrEqual(2.2);
      expect(of('light').backlog).toBeGreaterThan(0);
      expect(await doneOf(lightIds)).toBeLessThan(100);
    }, 90_000);

  it('a priority-1 run overtakes a priority-3 backlog', async () => {
    // No admission: the backlog sits in BullMQ's queue (4 jobs run at a time, 40 wait).
    h = await startHarness(inject('redisUrl'), [assistant!], {
      overrides: { WORKER_CONCURRENCY: '4', BATON_FAIRNESS: 'off' },
    });
    const harness = h;
    await flood(harness, 'tenant-p', 44, ask('assistant', 'report on uptime', { priority: 3 }));
    const [queue] = harness.client.queues.shardQueues('default');
    await waitFor(async () => (await queue!.getActiveCount()) >= 4, 10_000, '4 active jobs');
    const { runId } = await harness.client.service.createRun(
      'tenant-p',
      ask('assistant', 'what is the weather in Oslo', { priority: 1 }),
    );
    const first = (await harness.client.store.readEvents(runId))[0]!;
    await waitForStatus(harness, runId, ['done'], 20_000);
    const waited = (await startedAt(harness, runId)) - first.at;
    // One step of the backlog takes 1.5 s (the slow tool): it waited for one slot, not for
    // 40 jobs / 4 workers × 1.5 s = 15 s.
    expect(waited).toBeLessThan(2_500);
    const job = (await queue!.getJobs(['completed'])).find(
      (j: Job) => (j.data as { runId?: string }).runId === runId,
    );
    expect(job?.opts.priority).toBe(1);
  }, 60_000);

  it("a tenant's run limit: runs over it wait queued and say why; a run waiting for a human does not count", async () => {
    const fairness = { window: 0, tenants: { 'tenant-l': { maxRuns: 2 } } };
    h = await startHarness(inject('redisUrl'), [assistant!], {
      overrides: { BATON_FAIRNESS: JSON.stringify(fairness) },
    });
    const harness = h;
    const deploys = await flood(harness, 'tenant-l', 2, ask('assistant', 'deploy checkout'));
    for (const id of deploys) await waitForStatus(harness, id, ['waiting']);
    const reports = await flood(harness, 'tenant-l', 3, ask('assistant', 'report on uptime'), 1);
    const third = await harness.client.service.load('tenant-l', reports[2]!);
    expect(await harness.client.service.queuedInfo(third.checkpoint.identity)).toEqual({
      reason: 'tenant_limit',
      position: 1,
      backlog: 1,
      inProgress: 2,
    });
    expect(await harness.client.queues.liveStepJob(reports[2]!, 'assistant', 1)).toBeNull();
    // Approved, a deploy run asks for a slot again and gets one once a report finished.
    const cp = (await harness.client.store.load(deploys[0]!))!.checkpoint;
    const toolCallId = Object.values(cp.calls).find((c) => c.status === 'suspended')!.id;
    await harness.client.service.submitDecisions('tenant-l', deploys[0]!, [
      { toolCallId, action: 'resume' },
    ]);
    for (const id of [...reports, deploys[0]!]) await waitForStatus(harness, id, ['done'], 20_000);
    // A run gives its slot back right after its final commit (RunCommitter.finished), so `done`
    // can be seen a moment before the slot is free: wait for the release, then check the books.
    const stats = await waitFor(
      async () => {
        const all = await harness.client.admission.stats();
        return all.find((s) => s.key === 'tenant-l')?.inProgress === 0 ? all : null;
      },
      10_000,
      "tenant-l's slots given back",
    );
    expect(stats.find((s) => s.key === 'tenant-l')).toMatchObject({
      inProgress: 0,
      backlog: 0,
      dispatched: 2 + 3 + 1,
    });
  }, 60_000);
});

describe('fairness over HTTP', () => {
  it('POST /v1/runs takes priority and fairnessKey; a queued run says why; lists filter by key; /metrics per key', async () => {
    const fairness = { tenants: { 'tenant-a': { maxRunsPerKey: 1 } } };
    const cluster = await startApiCluster(inject('redisUrl'), [assistant!], {
      shared: { BATON_FAIRNESS: JSON.stringify(fairness) },
    });
    try {
      const api = new ApiClient(cluster.apis[0]!.url, KEYS.a);
      const body = (options: Record<string, unknown>) => ({
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'report on uptime' }] },
        options,
      });
      const first = await api.post<CreateRunResponse>(
        '/v1/runs',
        body({ priority: 2, fairnessKey: 'alice' }),
      );
      expect(first.status).toBe(202);
      expect(first.body.queued).toBeUndefined();
      const second = await api.post<CreateRunResponse>('/v1/runs', body({ fairnessKey: 'alice' }));
      expect(second.status).toBe(202);
      expect(second.body.queued).toEqual({
        reason: 'fairness_key_limit',
        position: 1,
        backlog: 1,
        inProgress: 1,
        limit: 1,
      });
      const view = await api.get(`/v1/runs/${second.body.runId}`);
      expect(view.body).toMatchObject({
        status: 'created',
        priority: 3,
        fairnessKey: 'alice',
        queued: { reason: 'fairness_key_limit', position: 1 },
      });
      expect((await api.get(`/v1/runs/${first.body.runId}`)).body).toMatchObject({
        priority: 2,
        fairnessKey: 'alice',
      });
      const listed = await api.get<RunPage>('/v1/runs?fairnessKey=alice');
      expect(listed.body.runs.map((r) => r.runId).sort()).toEqual(
        [first.body.runId, second.body.runId].sort(),
      );
      expect((await api.get<RunPage>('/v1/runs?fairnessKey=tenant-a')).body.runs).toEqual([]);
      const metrics = await api.withKey(KEYS.admin).get('/metrics');
      // "alice" is the tenant's own key, not the operator's: the tenant's total shows it.
      expect(metrics.body).toContain(
        'baton_fairness_runs{tenant="tenant-a",key="*",state="backlog"} 1',
      );
      expect(metrics.body).not.toContain('key="alice"');
      // A queued run cancelled leaves its key's backlog and ends, never having had a slot.
      const third = await api.post<CreateRunResponse>('/v1/runs', body({ fairnessKey: 'alice' }));
      expect(third.body.queued).toMatchObject({ position: 2, backlog: 2 });
      expect((await api.post(`/v1/runs/${third.body.runId}/cancel`, {})).status).toBe(202);
      const cancelled = await waitForStatus(cluster.h, third.body.runId, ['done'], 20_000);
      expect(cancelled.termination).toEqual({ kind: 'cancelled' });
      expect((await api.get(`/v1/runs/${second.body.runId}`)).body).toMatchObject({
        queued: { position: 1, backlog: 1 },
      });
      const bad = await api.post('/v1/runs', body({ priority: 9 }));
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('priority must be a whole number from 1');
      // The second run starts once the first is done; nothing was dropped.
      await waitForStatus(cluster.h, second.body.runId, ['done'], 20_000);
    } finally {
      await cluster.stop();
    }
  }, 60_000);
});
