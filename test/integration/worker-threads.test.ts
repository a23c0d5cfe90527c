/**
 * Threads through RunService on the distributed worker: history across runs, one active run per
 * thread and the multitask strategies, cancelling runs that never started, the reconciler
 * rescuing a run whose job was lost, and a graceful SIGTERM of a worker process.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  BatonError,
  ScriptedModel,
  defineTool,
  toolResult,
  type AgentDefinition,
} from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { AgentRegistry } from '@baton/runtime/internal';
import { type BatonWorker } from '@baton/worker';
import type { Checkpoint, RunEvent } from '@baton/protocol';
import { startHarness, waitFor, waitForStatus, type Harness } from '@baton/testing/worker-harness';
import { auditRun, spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 't-threads';

/** Model requests seen per run, so a test can check what the model was given. */
const requests = new Map<string, { step: number; messageIds: string[]; contents: string[] }[]>();

/** A one-step agent that records its model requests. */
const recorder: AgentDefinition = {
  name: 'recorder',
  model: new ScriptedModel((request) => {
    const list = requests.get(request.runId) ?? [];
    list.push({
      step: request.step,
      messageIds: request.messages.map((m) => m.id),
      contents: request.messages.map((m) => ('content' in m ? JSON.stringify(m.content) : '')),
    });
    requests.set(request.runId, list);
    return { text: `reply to ${request.messages.length} messages` };
  }),
  tools: [],
};

/** Open gates: the 'hold' tool of the gated agent waits until the test opens them (or an abort). */
const gates = new Set<() => void>();
function openGates(): void {
  for (const open of gates) open();
  gates.clear();
}
const hold = defineTool({
  name: 'hold',
  description: 'waits until the test lets it go; honors cancellation',
  inputSchema: z.object({}),
  execute: async (_args, ctx) => {
    await new Promise<void>((resolve, reject) => {
      const open = (): void => resolve();
      gates.add(open);
      ctx.signal.addEventListener('abort', () => {
        gates.delete(open);
        reject(ctx.signal.reason as Error);
      });
    });
    return toolResult.success({ held: true });
  },
});
/** Step 1 calls 'hold' (the run stays busy until the gate opens), step 2 ends. */
const gated: AgentDefinition = {
  name: 'gated',
  model: new ScriptedModel([
    { text: 'holding', toolCalls: [{ name: 'hold', arguments: {} }] },
    { text: 'released' },
  ]),
  tools: [hold],
};

const agents = (): AgentDefinition[] => [...createDemoAgents(systemClock), recorder, gated];

function user(content: string): { messages: { role: 'user'; content: string }[] } {
  return { messages: [{ role: 'user', content }] };
}

function firstEvent(events: readonly RunEvent[], pred: (e: RunEvent) => boolean): RunEvent {
  const found = events.find(pred);
  if (!found) throw new Error(`no such event among ${events.map((e) => e.type).join(',')}`);
  return found;
}

const finishedDone = (e: RunEvent): boolean => e.type === 'run.finished' && e.status === 'done';

/** The gated run is inside its 'hold' tool (so it is certainly the thread's active, running run). */
async function waitHolding(h: Harness, runId: string): Promise<void> {
  await waitFor(
    async () => {
      const s = await h.client.store.load(runId);
      return (
        s &&
        gates.size > 0 &&
        Object.values(s.checkpoint.calls).some((c) => c.name === 'hold' && c.status === 'running')
      );
    },
    15_000,
    `run ${runId} to hold`,
  );
}

describe('threads and run lifecycle through RunService', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), agents());
  });
  afterAll(async () => {
    openGates();
    await h.stop();
  });

  it("carries the thread history into the next run (the model sees the first run's messages)", async () => {
    const svc = h.client.service;
    const first = await svc.createRun(TENANT, { agent: 'recorder', input: user('first question') });
    const cp1 = await waitForStatus(h, first.runId, ['done']);
    const second = await svc.createRun(TENANT, {
      agent: 'recorder',
      threadId: first.threadId,
      input: user('second question'),
    });
    const cp2 = await waitForStatus(h, second.runId, ['done']);

    expect(cp2.termination).toEqual({ kind: 'natural_end' });
    expect(cp1.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(cp2.historyLength).toBe(cp1.messages.length);
    expect(cp2.messages.slice(0, cp2.historyLength).map((m) => m.id)).toEqual(
      cp1.messages.map((m) => m.id),
    );
    // What the model got for the second run: the whole first run, then the new question.
    const seen = requests.get(second.runId)?.[0];
    expect(seen?.messageIds.slice(0, cp1.messages.length)).toEqual(cp1.messages.map((m) => m.id));
    expect(seen?.contents.at(-1)).toBe(JSON.stringify('second question'));
    expect(seen?.contents).toContain(JSON.stringify('first question'));
    const thread = await svc.thread(TENANT, first.threadId);
    expect(thread.messages.map((m) => m.id)).toEqual(cp2.messages.map((m) => m.id));
    expect(thread.runIds.sort()).toEqual([first.runId, second.runId].sort());
    expect(thread.activeRunId).toBeNull();
    for (const id of [first.runId, second.runId])
      expect((await auditRun(h.client, id)).problems).toEqual([]);
  });

  it("one active run per thread: 'reject' throws thread_busy and creates nothing", async () => {
    const svc = h.client.service;
    const active = await svc.createRun(TENANT, { agent: 'gated', input: user('hold on') });
    await waitHolding(h, active.runId);
    const runsBefore = (await svc.listRuns({ tenantId: TENANT, limit: 100 })).runs.length;

    const attempt = svc.createRun(TENANT, {
      agent: 'recorder',
      threadId: active.threadId,
      input: user('me too'),
    });
    await expect(attempt).rejects.toBeInstanceOf(BatonError);
    await expect(attempt).rejects.toMatchObject({
      code: 'thread_busy',
      details: { threadId: active.threadId, activeRunId: active.runId },
    });
    // Explicit 'reject' behaves the same.
    await expect(
      svc.createRun(TENANT, {
        agent: 'recorder',
        threadId: active.threadId,
        input: user('me too'),
        options: { multitask: 'reject' },
      }),
    ).rejects.toMatchObject({ code: 'thread_busy' });

    const thread = await svc.thread(TENANT, active.threadId);
    expect(thread.runIds).toEqual([active.runId]);
    expect(thread.queued).toEqual([]);
    expect(thread.activeRunId).toBe(active.runId);
    expect((await svc.listRuns({ tenantId: TENANT, limit: 100 })).runs.length).toBe(runsBefore);
    expect(
      (await svc.listRuns({ tenantId: TENANT, threadId: active.threadId, limit: 100 })).runs.map(
        (r) => r.runId,
      ),
    ).toEqual([active.runId]);

    openGates();
    await waitForStatus(h, active.runId, ['done']);
    // Free again: the thread takes a new run.
    const next = await svc.createRun(TENANT, {
      agent: 'recorder',
      threadId: active.threadId,
      input: user('now?'),
    });
    expect((await waitForStatus(h, next.runId, ['done'])).termination).toEqual({
      kind: 'natural_end',
    });
  });

  it("'enqueue': the second run starts only after the first ends, from the thread as it is then", async () => {
    const svc = h.client.service;
    const first = await svc.createRun(TENANT, { agent: 'gated', input: user('hold on') });
    await waitHolding(h, first.runId);
    const second = await svc.createRun(TENANT, {
      agent: 'recorder',
      threadId: first.threadId,
      input: user('after you'),
      options: { multitask: 'enqueue' },
    });
    expect(second.queuedBehind).toBe(first.runId);
    expect(second.status).toBe('created');
    expect((await svc.thread(TENANT, first.threadId)).queued).toEqual([second.runId]);

    // While the first holds, the second must not move.
    await new Promise((r) => setTimeout(r, 300));
    expect((await h.client.store.load(second.runId))?.checkpoint.status).toBe('created');
    expect(
      (await h.client.store.readEvents(second.runId)).some((e) => e.type === 'run.started'),
    ).toBe(false);

    openGates();
    const cp1 = await waitForStatus(h, first.runId, ['done']);
    const cp2 = await waitForStatus(h, second.runId, ['done']);
    expect(cp1.termination).toEqual({ kind: 'natural_end' });
    expect(cp2.termination).toEqual({ kind: 'natural_end' });
    const ev1 = await h.client.store.readEvents(first.runId);
    const ev2 = await h.client.store.readEvents(second.runId);
    const firstFinished = firstEvent(ev1, finishedDone);
    const secondStarted = firstEvent(ev2, (e) => e.type === 'run.started');
    expect(secondStarted.at).toBeGreaterThanOrEqual(firstFinished.at);
    // The queued run was created with no history and rebased on the thread when it started.
    expect(cp2.historyLength).toBe(cp1.messages.length);
    expect(requests.get(second.runId)?.[0]?.messageIds.slice(0, cp1.messages.length)).toEqual(
      cp1.messages.map((m) => m.id),
    );
    for (const id of [first.runId, second.runId])
      expect((await auditRun(h.client, id)).problems).toEqual([]);
    expect((await svc.thread(TENANT, first.threadId)).activeRunId).toBeNull();
  });

  it("'interrupt': the active run ends Cancelled, then the new run runs to completion", async () => {
    const svc = h.client.service;
    const first = await svc.createRun(TENANT, { agent: 'gated', input: user('hold on') });
    await waitHolding(h, first.runId);
    const second = await svc.createRun(TENANT, {
      agent: 'recorder',
      threadId: first.threadId,
      input: user('stop that'),
      options: { multitask: 'interrupt' },
    });
    expect(second.queuedBehind).toBe(first.runId);

    const cp1 = await waitForStatus(h, first.runId, ['done']);
    const cp2 = await waitForStatus(h, second.runId, ['done']);
    expect(cp1.termination).toEqual({ kind: 'cancelled' });
    expect(cp2.termination).toEqual({ kind: 'natural_end' });
    expect(gates.size).toBe(0); // the held tool was aborted, not released
    const ev1 = await h.client.store.readEvents(first.runId);
    const ev2 = await h.client.store.readEvents(second.runId);
    expect(firstEvent(ev2, (e) => e.type === 'run.started').at).toBeGreaterThanOrEqual(
      firstEvent(ev1, finishedDone).at,
    );
    for (const id of [first.runId, second.runId])
      expect((await auditRun(h.client, id)).problems).toEqual([]);
    const thread = await svc.thread(TENANT, first.threadId);
    expect(thread.activeRunId).toBeNull();
    expect(thread.queued).toEqual([]);
  });

  it('cancelling a queued run ends it at once; it never starts and the active run is unaffected', async () => {
    const svc = h.client.service;
    const first = await svc.createRun(TENANT, { agent: 'gated', input: user('hold on') });
    await waitHolding(h, first.runId);
    const queued = await svc.createRun(TENANT, {
      agent: 'recorder',
      threadId: first.threadId,
      input: user('later'),
      options: { multitask: 'enqueue' },
    });
    const cancelled = await svc.cancel(TENANT, queued.runId);
    expect(cancelled.status).toBe('done');
    const cpq = (await h.client.store.load(queued.runId))!.checkpoint;
    expect(cpq.termination).toEqual({ kind: 'cancelled' });
    expect((await svc.thread(TENANT, first.threadId)).queued).toEqual([]);
    // Idempotent.
    expect((await svc.cancel(TENANT, queued.runId)).status).toBe('done');

    openGates();
    const cp1 = await waitForStatus(h, first.runId, ['done']);
    expect(cp1.termination).toEqual({ kind: 'natural_end' });
    await new Promise((r) => setTimeout(r, 200));
    const evq = await h.client.store.readEvents(queued.runId);
    expect(evq.some((e) => e.type === 'run.started')).toBe(false);
    expect(evq.filter(finishedDone)).toHaveLength(1);
    expect(requests.has(queued.runId)).toBe(false);
    const thread = await svc.thread(TENANT, first.threadId);
    expect(thread.activeRunId).toBeNull();
    // The cancelled run added nothing to the history.
    expect(thread.messages.map((m) => m.id)).toEqual(cp1.messages.map((m) => m.id));
  });
});

describe('runs left without a job, and shutdown', () => {
  let h: Harness;
  beforeAll(async () => {
    // No worker at first; the agents are advertised as a worker would. The reconciler only runs
    // when the test asks (long interval), and a short lease makes runs stale after 1 s.
    h = await startHarness(inject('redisUrl'), agents(), {
      workers: 0,
      overrides: { RECONCILE_INTERVAL_MS: '600000', LEASE_TTL_MS: '500' },
    });
    await new AgentRegistry(agents()).advertise(
      h.client.redis,
      h.client.keys,
      'test-advertiser',
      Date.now(),
    );
  });
  afterAll(async () => {
    openGates();
    await stopAllWorkerProcesses();
    await h.stop();
  });

  let worker: BatonWorker | undefined;

  it('cancelling a created run (no worker has seen it) ends it at once', async () => {
    const svc = h.client.service;
    const created = await svc.createRun(TENANT, { agent: 'assistant', input: user('weather?') });
    expect((await svc.cancel(TENANT, created.runId)).status).toBe('done');
    const cp = (await h.client.store.load(created.runId))!.checkpoint;
    expect(cp.termination).toEqual({ kind: 'cancelled' });
    expect((await svc.thread(TENANT, created.threadId)).activeRunId).toBeNull();
    const events = await h.client.store.readEvents(created.runId);
    expect(events.map((e) => e.type)).not.toContain('run.started');
    expect((await auditRun(h.client, created.runId)).problems).toEqual([]);
  });

  it('the reconciler re-enqueues a run whose job was lost', async () => {
    const svc = h.client.service;
    const created = await svc.createRun(TENANT, {
      agent: 'assistant',
      input: user('weather in Lisbon?'),
    });
    // Lose every queued step job (e.g. a Redis failover dropped them).
    await h.client.queues.shardQueues('default')[0]!.obliterate({ force: true });
    expect(
      await h.client.queues
        .shardQueues('default')[0]!
        .getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
    ).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });

    worker = await h.addWorker();
    await new Promise((r) => setTimeout(r, 300));
    // The worker alone does not know about the run.
    expect((await h.client.store.load(created.runId))?.checkpoint.status).toBe('created');

    // Stale after max(2 x lease, 1 s); scan until the reconciler picks it.
    const rescheduled = await waitFor(
      async () => {
        const ids = (await worker!.reconcile())?.rescheduled ?? [];
        return ids.includes(created.runId) ? ids : null;
      },
      10_000,
      'the reconciler to reschedule the run',
    );
    expect(rescheduled).toContain(created.runId);
    const cp = await waitForStatus(h, created.runId, ['done']);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect((await auditRun(h.client, created.runId)).problems).toEqual([]);
    // A healthy finished run is not rescheduled again.
    expect((await worker.reconcile())?.rescheduled ?? []).not.toContain(created.runId);
  });

  for (const variant of [
    { name: 'grace shorter than the tool: the tool is aborted', grace: 300, agent: 'assistant' },
    {
      name: 'grace longer than the tool: the in-flight tool finishes',
      grace: 4_000,
      agent: 'parallel-assistant',
    },
    {
      name: 'grace shorter than a parallel tool job: the tool job is retried elsewhere',
      grace: 300,
      agent: 'parallel-assistant',
    },
  ] as const) {
    it(
      `SIGTERM during a slow tool (${variant.name}); the run completes on another worker`,
      { timeout: 30_000 },
      async () => {
        // Only the process may take the job at first: stop the in-process worker.
        if (worker) {
          await worker.stop(500);
          h.workers.splice(h.workers.indexOf(worker), 1);
          worker = undefined;
        }
        const proc = await spawnWorker({
          redisUrl: h.config.REDIS_URL,
          prefix: h.prefix,
          agents: 'demo',
          env: { SHUTDOWN_GRACE_MS: String(variant.grace) },
        });
        const created = await h.client.service.createRun(TENANT, {
          agent: variant.agent,
          input: user('build a report on ducks'),
        });
        const started = await proc.onProbe('before-tool', (p) => p['runId'] === created.runId);
        const sigtermAt = Date.now();
        proc.kill('SIGTERM');
        const exit = await proc.waitForExit(variant.grace + 5_000);
        const exitMs = exit.at - sigtermAt;
        expect(exit.code).toBe(0);
        // slow_report takes 1.5 s: with a short grace the process leaves at about the grace.
        if (variant.grace < 1_000) expect(exitMs).toBeLessThan(variant.grace + 1_500);
        else expect(exitMs).toBeLessThan(variant.grace + 1_000);

        worker = await h.addWorker();
        const cp = await waitForStatus(h, created.runId, ['done'], 20_000);
        expect(cp.termination).toEqual({ kind: 'natural_end' });
        const audit = await auditRun(h.client, created.runId);
        expect(audit.problems).toEqual([]);
        expect(audit.resultsPerCall).toEqual({ [started['toolCallId'] as string]: 1 });
        const result = audit.events.find((e) => e.type === 'tool_call.result');
        expect(JSON.stringify(result)).toContain('"pages":3');
        console.info(
          `[worker-threads] SIGTERM (${variant.agent}, grace ${variant.grace} ms): exit after ${exitMs} ms, code ${exit.code}`,
        );
        const done: Checkpoint = cp;
        expect(done.status).toBe('done');
      },
    );
  }
});
