/**
 * What a live run still needs never expires, and a tool job that did nothing never blocks the
 * round that reuses its id (issue 32, items 13 and 16):
 * - a result recorded into the tool-result mailbox waits for its pass however long that takes,
 *   past EVENT_RETENTION_SECONDS (the mailbox used to expire under the live run: the call ran
 *   again, or the run stood still for good);
 * - a tool job that completed `stale` (it ran before its call did) is replaced when the run
 *   reaches that call and attempt (it used to answer every pass "delegated" for ever);
 * - the mailbox of a finished (or missing) run still expires.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { JOB_PAYLOAD_VERSION, type Checkpoint } from '@baton/protocol';
import { BatonRuntime } from '@baton/runtime';
import { AgentRegistry, RunRecordScripts } from '@baton/runtime/internal';
import { BatonWorker } from '@baton/worker';
import {
  silentLogger,
  startHarness,
  testConfig,
  testPrefix,
  waitFor,
  waitForStatus,
  type Harness,
} from '@baton/testing/worker-harness';

const TENANT = 't-live-results';
const RETENTION = '2';
const executions = new Map<string, number>();

const counted = defineTool({
  name: 'counted',
  description: 'counts its executions per run',
  inputSchema: z.object({}),
  execute: async (_args, ctx) => {
    executions.set(ctx.identity.runId, (executions.get(ctx.identity.runId) ?? 0) + 1);
    return toolResult.success('counted');
  },
});

const agents: AgentDefinition[] = [
  {
    name: 'counter',
    model: new ScriptedModel((request) =>
      request.messages.at(-1)?.role === 'user'
        ? { toolCalls: [{ id: 'call_a', name: 'counted', arguments: {} }] }
        : { text: 'done' },
    ),
    tools: [counted],
    executionMode: 'parallel_streaming',
  },
];

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const input = { messages: [{ role: 'user' as const, content: 'go' }] };

/** The run's tool messages: one per call that got its result. */
function toolMessages(cp: Checkpoint): { toolCallId: string; isError: boolean }[] {
  return cp.messages.flatMap((m) =>
    m.role === 'tool' ? [{ toolCallId: m.toolCallId, isError: m.isError }] : [],
  );
}

/** The agent's advert, so runs are accepted before any worker started. */
async function advertise(client: BatonRuntime): Promise<void> {
  await new AgentRegistry(agents).advertise(client.redis, client.keys, 'test', Date.now());
}

describe('a live run keeps what it needs', () => {
  it('a result applied later than EVENT_RETENTION_SECONDS is applied, its call runs once', async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const config = testConfig(redisUrl, prefix, { EVENT_RETENTION_SECONDS: RETENTION });
    const client = new BatonRuntime({ config, logger: silentLogger });
    stops.push(() => client.close());
    let target = '';
    let released!: () => void;
    const release = new Promise<void>((resolve) => (released = resolve));
    let recorded!: () => void;
    const wasRecorded = new Promise<void>((resolve) => (recorded = resolve));
    const worker = new BatonWorker({
      config,
      agents,
      logger: silentLogger,
      // The tool job's result is recorded; its pass (the parent step job's re-entry) comes only
      // once the test says so: a worker outage, a sibling waiting for a human, a long deploy.
      probe: async (point, info) => {
        if (point !== 'after-tool-recorded' || info['runId'] !== target) return;
        recorded();
        await release;
      },
    });
    await worker.start();
    stops.push(() => worker.stop(500));
    const { runId } = await client.service.createRun(TENANT, { agent: 'counter', input });
    target = runId;
    await wasRecorded;
    const results = client.keys.run(runId).results;
    // Past the retention the mailbox is gone (the bug) or it never expires (the fix).
    const ttl = await waitFor(
      async () => {
        const ms = await client.redis.pttl(results);
        return ms === -1 || ms === -2 ? ms : null;
      },
      30_000,
      'the mailbox to expire or to have no expiry',
    );
    expect(ttl).toBe(-1);
    released();
    const done = await waitFor(
      async () => {
        const stored = await client.store.load(runId);
        return stored?.checkpoint.status === 'done' ? stored.checkpoint : null;
      },
      30_000,
      `run ${runId} to finish`,
    );
    expect(done.termination).toEqual({ kind: 'natural_end' });
    expect(toolMessages(done)).toEqual([{ toolCallId: 'call_a', isError: false }]);
    expect(executions.get(runId)).toBe(1);
    // Finished: the mailbox now expires with the run.
    expect(await client.redis.ttl(results)).toBeGreaterThan(0);
  }, 60_000);

  it('a stray tool job that completed stale is replaced when the run reaches its call', async () => {
    const h: Harness = await startHarness(inject('redisUrl'), agents, {
      workers: 0,
      overrides: { RECONCILE_INTERVAL_MS: '300' },
    });
    stops.push(() => h.stop());
    await advertise(h.client);
    const { runId } = await h.client.service.createRun(TENANT, { agent: 'counter', input });
    // The run's start job is lost (a power loss took it, a crash between create and enqueue)...
    const queue = await h.client.queues.runQueue({ runId, agent: 'counter' });
    for (const job of await queue.getJobs(['wait', 'prioritized', 'delayed']))
      if ((job.data as { runId?: string }).runId === runId) await job.remove();
    // ...and a tool job for its first call exists before the call does (an add replayed into
    // a Redis that lost the commit before it): it runs, finds no such call, completes stale.
    const strayId = await h.client.queues.addToolChild(
      {
        v: JOB_PAYLOAD_VERSION,
        kind: 'tool',
        runId,
        tenantId: TENANT,
        step: 1,
        toolCallId: 'call_a',
        attempt: 0,
      },
      'counter',
    );
    await h.addWorker();
    const stray = await waitFor(
      async () => {
        const job = await queue.getJob(strayId);
        return job && (await job.getState()) === 'completed' ? job : null;
      },
      30_000,
      'the stray tool job to complete',
    );
    expect(stray.returnvalue).toBe('stale');
    // The reconciler starts the run; its round reuses the stray job's id.
    const done = await waitForStatus(h, runId, ['done'], 45_000);
    expect(done.termination).toEqual({ kind: 'natural_end' });
    expect(toolMessages(done)).toEqual([{ toolCallId: 'call_a', isError: false }]);
    expect(executions.get(runId)).toBe(1);
  }, 90_000);

  it("a live run's mailbox has no expiry; a finished or missing run's expires", async () => {
    const redisUrl = inject('redisUrl');
    const client = new BatonRuntime({
      config: testConfig(redisUrl, testPrefix(), { EVENT_RETENTION_SECONDS: RETENTION }),
      logger: silentLogger,
    });
    stops.push(() => client.close());
    const scripts = new RunRecordScripts(client.redis);
    await advertise(client);
    const { runId } = await client.service.createRun(TENANT, { agent: 'counter', input });
    const keys = client.keys.run(runId);
    // A mailbox an earlier release gave a TTL loses it at the next record.
    await client.redis.hset(keys.results, 'old#0', '{}');
    await client.redis.expire(keys.results, 2);
    expect(await scripts.recordResult(keys, 'call_a#0', '{"a":1}', 2)).toBeNull();
    expect(await client.redis.pttl(keys.results)).toBe(-1);
    // First writer wins, and a second record leaves the expiry alone.
    expect(await scripts.recordResult(keys, 'call_a#0', '{"a":2}', 2)).toBe('{"a":1}');
    expect(await client.redis.pttl(keys.results)).toBe(-1);
    // Missing run (a late delivery to a deleted parent, a stray job): expires.
    const gone = client.keys.run(`${runId}-gone`);
    expect(await scripts.recordResult(gone, 'call_a#0', '{}', 2)).toBeNull();
    expect(await client.redis.ttl(gone.results)).toBeGreaterThan(0);
    // A finished run: its retention stays as the final commit set it (EXPIRE NX).
    await client.redis.hset(keys.cp, 'status', 'done');
    await client.redis.expire(keys.results, 1_000);
    expect(await scripts.recordResult(keys, 'call_b#0', '{}', 2)).toBeNull();
    expect(await client.redis.ttl(keys.results)).toBeGreaterThan(2);
  });
});
