/**
 * Queue shards on one Redis: with BATON_QUEUE_SHARDS = 4 runs with parallel tool calls (BullMQ
 * flows: a step job and its tool children in one shard) and approvals finish, and their jobs
 * spread over the shards. Changing K on a live system loses no run: runs waiting on approval
 * and jobs queued under K = 2 all finish, exactly once, after the API and the worker restart
 * with K = 4 (the old shards are drained while they hold jobs). A job in an agent's queue of the
 * per-agent layout is drained the same way, and a job that reached a task queue whose workers do
 * not run its agent moves to the agent's own.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ScriptedModel } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import { BatonRuntime, systemClock } from '@baton/runtime';
import { BatonWorker } from '@baton/worker';
import { AgentRegistry, shardQueueNames, stepQueueName } from '@baton/runtime/internal';
import { JOB_PAYLOAD_VERSION } from '@baton/protocol';
import {
  silentLogger,
  testConfig,
  testPrefix,
  waitFor,
  waitForStatus,
  type Harness,
} from '@baton/testing/worker-harness';
import { auditRun } from '@baton/testing/worker-process';

const TENANT = 't-shards';
const deploy = { messages: [{ role: 'user' as const, content: 'deploy please' }] };
const weather = { messages: [{ role: 'user' as const, content: 'weather in Oslo?' }] };

interface Stack {
  readonly client: BatonRuntime;
  readonly worker: BatonWorker;
}

const stacks: Stack[] = [];

/** An API's runtime and a worker, both with this K. */
async function startStack(redisUrl: string, prefix: string, shards: number): Promise<Stack> {
  const config = testConfig(redisUrl, prefix, { BATON_QUEUE_SHARDS: String(shards) });
  const worker = new BatonWorker({
    config,
    agents: createDemoAgents(systemClock),
    logger: silentLogger,
  });
  await worker.start();
  const client = new BatonRuntime({ config, logger: silentLogger });
  const stack = { client, worker };
  stacks.push(stack);
  return stack;
}

async function stopStack(stack: Stack): Promise<void> {
  stacks.splice(stacks.indexOf(stack), 1);
  await stack.worker.stop(500);
  await stack.client.close();
}

afterAll(async () => {
  await Promise.all([...stacks].map(stopStack));
});

/** Approves every suspended call of the run. */
async function approve(client: BatonRuntime, runId: string): Promise<void> {
  const cp = (await client.store.load(runId))!.checkpoint;
  const calls = Object.values(cp.calls).filter((c) => c.status === 'suspended');
  expect(calls.length).toBeGreaterThan(0);
  await client.service.submitDecisions(
    TENANT,
    runId,
    calls.map((c) => ({ toolCallId: c.id, action: 'resume' as const })),
  );
}

/** Each run ended naturally, with every call's result applied exactly once. */
async function expectFinishedOnce(client: BatonRuntime, runIds: readonly string[]): Promise<void> {
  for (const runId of runIds) {
    const h = { client } as unknown as Harness;
    const cp = await waitForStatus(h, runId, ['done'], 30_000);
    expect(cp.termination, runId).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(client, runId);
    expect(audit.problems, runId).toEqual([]);
    for (const n of Object.values(audit.resultsPerCall)) expect(n).toBe(1);
  }
}

describe('queue shards (K = 4)', () => {
  it('runs with parallel tool calls and approvals finish; their jobs land in several shards', async () => {
    const prefix = testPrefix();
    const { client } = await startStack(inject('redisUrl'), prefix, 4);
    const plain = await Promise.all(
      Array.from({ length: 20 }, () =>
        client.service.createRun(TENANT, { agent: 'parallel-assistant', input: weather }),
      ),
    );
    const gated = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.service.createRun(TENANT, { agent: 'parallel-assistant', input: deploy }),
      ),
    );
    for (const { runId } of gated)
      await waitForStatus({ client } as unknown as Harness, runId, ['waiting'], 30_000);
    for (const { runId } of gated) await approve(client, runId);
    await expectFinishedOnce(
      client,
      [...plain, ...gated].map((r) => r.runId),
    );

    const perShard = await Promise.all(
      client.queues.shardQueues('default').map(async (q) => {
        const kinds = (await q.getJobs(['completed'], 0, -1)).map(
          (j) => (j.data as { kind?: string }).kind,
        );
        return {
          name: q.name,
          steps: kinds.filter((k) => k === 'step').length,
          tools: kinds.filter((k) => k === 'tool').length,
        };
      }),
    );
    expect(perShard.map((s) => s.name)).toEqual(shardQueueNames('default', 4));
    expect(perShard.filter((s) => s.steps > 0 && s.tools > 0).length).toBeGreaterThanOrEqual(2);
    // Nothing went to a queue of another layout.
    expect((await client.queues.registered()).sort()).toEqual(shardQueueNames('default', 4).sort());
  });
});

describe('changing K from 2 to 4', () => {
  it('runs waiting on approval and jobs queued under K = 2 all finish exactly once under K = 4', async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const before = await startStack(redisUrl, prefix, 2);
    const waiting = await Promise.all(
      Array.from({ length: 10 }, () =>
        before.client.service.createRun(TENANT, { agent: 'parallel-assistant', input: deploy }),
      ),
    );
    for (const { runId } of waiting)
      await waitForStatus(before as unknown as Harness, runId, ['waiting'], 30_000);
    // The worker goes; runs created meanwhile leave their jobs in the K = 2 shards.
    await before.worker.stop(500);
    const queued = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        before.client.service.createRun(TENANT, {
          agent: i % 2 === 0 ? 'parallel-assistant' : 'assistant',
          input: weather,
        }),
      ),
    );
    let oldShards = before.client.queues.shardQueues('default', 2);
    const pending = async (): Promise<number> => {
      let n = 0;
      for (const q of oldShards)
        n += await q.getJobCountByTypes(
          'wait',
          'active',
          'delayed',
          'prioritized',
          'waiting-children',
        );
      return n;
    };
    expect(await pending()).toBe(20);
    await before.client.close();
    stacks.splice(stacks.indexOf(before), 1);

    // API and worker restart with K = 4.
    const after = await startStack(redisUrl, prefix, 4);
    oldShards = after.client.queues.shardQueues('default', 2);
    for (const { runId } of waiting) await approve(after.client, runId);
    await expectFinishedOnce(
      after.client,
      [...waiting, ...queued].map((r) => r.runId),
    );
    // The queued jobs ran from the old shards, which are empty now; the decisions went to the new.
    await waitFor(
      async () => ((await pending()) === 0 ? true : null),
      10_000,
      'old shards to drain',
    );
    let fromOld = 0;
    for (const q of oldShards) fromOld += await q.getJobCountByTypes('completed');
    expect(fromOld).toBeGreaterThanOrEqual(20);
    let inNew = 0;
    for (const q of after.client.queues.shardQueues('default'))
      inNew += await q.getJobCountByTypes('completed');
    expect(inNew).toBeGreaterThan(0);
  });
});

describe('upgrading from per-agent queues', () => {
  it("a run whose step job sits in its agent's queue of the previous layout finishes", async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const first = await startStack(redisUrl, prefix, 1);
    await first.worker.stop(500);
    const { client } = first;
    const created = await client.service.createRun(TENANT, { agent: 'assistant', input: weather });
    // As the previous version would have left it: the job in `steps.assistant`, none in a shard.
    const shard = await client.queues.runQueue({ runId: created.runId, agent: 'assistant' });
    await shard.obliterate({ force: true });
    const meta = (await client.store.meta(created.runId))!;
    await client.queues.queue(stepQueueName('assistant')).add(
      'start',
      {
        v: JOB_PAYLOAD_VERSION,
        kind: 'step',
        runId: created.runId,
        tenantId: TENANT,
        reason: 'start',
        expectedVersion: meta.version,
      },
      { jobId: `step.old.${created.runId}` },
    );
    const next = await startStack(redisUrl, prefix, 1);
    await expectFinishedOnce(next.client, [created.runId]);
  });
});

describe('a job in a task queue whose workers do not run its agent', () => {
  it("moves to the agent's current task queue and its run finishes there", async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    // A pool on `default` without the agent, and the agent's own pool on `answers`.
    const bystander = await startStack(redisUrl, prefix, 2);
    const client = bystander.client;
    // The run is created while the agent is advertised on `default` (its workers were there),
    // and they move to `answers` before the job is taken: it is in a queue whose workers do not
    // run its agent.
    await new AgentRegistry([
      { name: 'answerer', model: new ScriptedModel([{ text: 'never' }]), tools: [] },
    ]).advertise(client.redis, client.keys, 'earlier-worker', Date.now(), 'default');
    const created = await client.service.createRun(TENANT, { agent: 'answerer', input: weather });
    const queue = await client.queues.runQueue({ runId: created.runId, agent: 'answerer' });
    expect(queue.name).toMatch(/^default\./);
    const answerer = new BatonWorker({
      config: testConfig(redisUrl, prefix, {
        BATON_QUEUE_SHARDS: '2',
        BATON_TASK_QUEUE: 'answers',
      }),
      agents: [
        { name: 'answerer', model: new ScriptedModel([{ text: 'moved and done' }]), tools: [] },
      ],
      logger: silentLogger,
    });
    await answerer.start();
    try {
      await expectFinishedOnce(client, [created.runId]);
      const jobs = await queue.getJobs(['completed'], 0, -1);
      const moved = jobs.filter(
        (j) => (j.data as { runId?: string }).runId === created.runId && j.returnvalue === 'moved',
      );
      expect(moved.length).toBe(1);
    } finally {
      await answerer.stop(500);
    }
  });
});
