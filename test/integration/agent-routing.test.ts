/**
 * Routing like task queues: two worker pools with disjoint agents share one Redis, each on its
 * own task queue (BATON_TASK_QUEUE = its agent's name). A step or tool job reaches only a worker
 * that registered its run's agent; a run for an agent with no
 * live worker is accepted, says it waits for a worker, and starts when one arrives.
 *
 * Each pool records which runs its model calls and its tools saw, so a misrouted job is counted
 * where it happens, not only inferred from a run that failed.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime } from '@baton/runtime';
import { BatonWorker, type WorkerConfig } from '@baton/worker';
import { shardQueueName } from '@baton/runtime/internal';
import { ApiClient } from '@baton/testing/api-harness';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const TENANT = 'tenant-a';
const KEY = 'routing-secret-key-1';
const ADMIN_KEY = 'routing-admin-key-1';
const PER_AGENT = 250;
const LATE = 60;

interface Pool {
  readonly name: string;
  readonly workers: BatonWorker[];
  /** Run ids whose model call or tool this pool's workers executed. */
  readonly inferred: string[];
  readonly tools: { runId: string; agent: string }[];
}

/** One tool round, then an answer: each run has step jobs and a tool job in its agent's queues. */
function agentFor(name: string, pool: Pool): AgentDefinition {
  const noop = defineTool({
    name: 'noop',
    description: 'records where it ran',
    inputSchema: z.object({}),
    execute: async (_args, ctx) => {
      pool.tools.push({ runId: ctx.identity.runId, agent: ctx.identity.agent });
      return toolResult.success(null);
    },
  });
  return {
    name,
    model: new ScriptedModel([{ toolCalls: [{ name: 'noop', arguments: {} }] }, { text: 'done' }]),
    tools: [noop],
    executionMode: 'parallel_streaming',
  };
}

async function startPool(
  name: string,
  agent: string,
  config: WorkerConfig,
  size: number,
  pool: Pool = { name, workers: [], inferred: [], tools: [] },
): Promise<Pool> {
  for (let i = 0; i < size; i += 1) {
    const worker = new BatonWorker({
      // Pools with different agents serve them on different task queues.
      config: {
        ...config,
        WORKER_ID: `${name}-${String(pool.workers.length)}`,
        BATON_TASK_QUEUE: agent,
      },
      agents: [agentFor(agent, pool)],
      logger: silentLogger,
      probe: (point, info) => {
        if (point === 'before-infer') pool.inferred.push(String(info['runId']));
      },
    });
    await worker.start();
    pool.workers.push(worker);
  }
  return pool;
}

async function stopPool(pool: Pool): Promise<void> {
  await Promise.all(pool.workers.splice(0).map((w) => w.stop(500)));
}

describe('routing: two worker pools with disjoint agents on one Redis', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const config = testConfig(redisUrl, prefix, { AGENT_HEARTBEAT_TTL_MS: '3000' });
  const agentOf = new Map<string, string>();
  let client: BatonRuntime;
  let api: RunningApi;
  let http: ApiClient;
  let alpha: Pool;
  let beta: Pool;

  const submit = async (agent: string, n: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, async (_, j) => {
          const r = await http.post<{ runId: string }>('/v1/runs', {
            agent,
            input: { messages: [{ role: 'user', content: `${agent} ${String(i + j)}` }] },
          });
          expect(r.status, JSON.stringify(r.body)).toBe(202);
          return r.body.runId;
        }),
      );
      for (const id of batch) agentOf.set(id, agent);
      ids.push(...batch);
    }
    return ids;
  };

  const waitAllDone = async (ids: readonly string[], timeoutMs: number): Promise<void> => {
    await waitFor(
      async () => {
        const metas = await Promise.all(ids.map((id) => client.store.meta(id)));
        return metas.every((m) => m?.status === 'done');
      },
      timeoutMs,
      `${String(ids.length)} runs to finish`,
    );
  };

  /** Every run ended naturally, and nothing of it mentions a missing agent. */
  const expectFinishedCleanly = async (ids: readonly string[]): Promise<void> => {
    const bad: string[] = [];
    for (const id of ids) {
      const cp = (await client.store.load(id))!.checkpoint;
      if (cp.termination?.kind !== 'natural_end')
        bad.push(`${id}: ${JSON.stringify(cp.termination)}`);
      const events = JSON.stringify(await client.store.readEvents(id));
      if (events.includes('no worker agent named')) bad.push(`${id}: misrouted`);
    }
    expect(bad).toEqual([]);
  };

  /** Jobs (inferences, tool calls) a pool executed for runs of the other agent. */
  const misrouted = (pool: Pool, agent: string): string[] => [
    ...pool.inferred.filter((id) => agentOf.get(id) !== agent),
    ...pool.tools.filter((t) => t.agent !== agent).map((t) => t.runId),
  ];

  const failedJobs = async (): Promise<number> => {
    let n = 0;
    for (const q of await client.queues.listQueues(['alpha', 'beta']))
      n += (await q.getJobCounts('failed'))['failed'] ?? 0;
    return n;
  };

  beforeAll(async () => {
    client = new BatonRuntime({ config, logger: silentLogger });
    const apiConfig = loadApiConfig({
      REDIS_URL: redisUrl,
      BATON_PREFIX: prefix,
      API_KEYS: `${TENANT}:${KEY}`,
      ADMIN_KEYS: `ops:${ADMIN_KEY}`,
      LOG_LEVEL: 'silent',
    });
    api = await startApi({ config: apiConfig, port: 0, host: '127.0.0.1', logger: silentLogger });
    http = new ApiClient(api.url, KEY);
    alpha = await startPool('alpha-pool', 'alpha', config, 2);
    beta = await startPool('beta-pool', 'beta', config, 2);
  });

  afterAll(async () => {
    await Promise.all([alpha, beta].filter(Boolean).map(stopPool));
    await api?.close();
    await client?.close();
  });

  it(
    `${String(2 * PER_AGENT)} runs over two agents: 0 misrouted jobs, 0 failed runs`,
    // A fixed amount of CPU work in this process (500 runs, not a rate): ~15 s on a quiet
    // 2-core machine, 60 s at a load of 20 with other files running beside it.
    { timeout: 150_000 },
    async () => {
      const listed = await http.get<{
        agents: { name: string; workers: string[]; available: boolean }[];
      }>('/v1/agents');
      expect(listed.body.agents.map((a) => [a.name, a.workers, a.available])).toEqual([
        ['alpha', ['alpha-pool-0', 'alpha-pool-1'], true],
        ['beta', ['beta-pool-0', 'beta-pool-1'], true],
      ]);
      const started = Date.now();
      const [a, b] = await Promise.all([submit('alpha', PER_AGENT), submit('beta', PER_AGENT)]);
      await waitAllDone([...a, ...b], 120_000);
      console.info(
        `[agent-routing] ${String(2 * PER_AGENT)} runs on two pools in ${String(Date.now() - started)} ms`,
      );
      await expectFinishedCleanly([...a, ...b]);
      expect(misrouted(alpha, 'alpha')).toEqual([]);
      expect(misrouted(beta, 'beta')).toEqual([]);
      // Each pool did its own agent's work (one model call per round, one tool call per run).
      expect(new Set(alpha.tools.map((t) => t.runId)).size).toBe(PER_AGENT);
      expect(new Set(beta.tools.map((t) => t.runId)).size).toBe(PER_AGENT);
      expect(await failedJobs()).toBe(0);

      // Bull Board shows the queue of each advertised agent's task queue next to the legacy pair.
      const board = await http
        .withKey(ADMIN_KEY)
        .get<{ queues: { name: string }[] }>('/admin/queues/api/queues');
      expect(board.status).toBe(200);
      expect(board.body.queues.map((q) => q.name).sort()).toEqual(
        [shardQueueName('alpha', 0, 1), shardQueueName('beta', 0, 1), 'steps', 'tools'].sort(),
      );
    },
  );

  it(
    'with every beta worker gone, beta runs wait for a worker while alpha runs go on; a beta pool started 10 s later finishes them',
    { timeout: 60_000 },
    async () => {
      await stopPool(beta);
      const agents = await http.get('/v1/agents/beta');
      expect(agents.body).toMatchObject({ name: 'beta', workers: [], available: false });

      const submittedAt = Date.now();
      const waiting = await submit('beta', LATE);
      const others = await submit('alpha', LATE);
      await waitAllDone(others, 30_000);
      await expectFinishedCleanly(others);

      // Ten seconds after submission the beta runs are still accepted, untouched, and say why.
      await new Promise((r) => setTimeout(r, Math.max(0, submittedAt + 10_000 - Date.now())));
      for (const id of waiting) {
        const view = await http.get(`/v1/runs/${id}`);
        expect(view.status).toBe(200);
        expect(view.body).toMatchObject({ status: 'created', waitingForWorker: true });
      }
      const before = beta.tools.length;
      expect(misrouted(alpha, 'alpha')).toEqual([]);

      beta = await startPool('beta-pool-late', 'beta', config, 1, { ...beta, workers: [] });
      await waitAllDone(waiting, 30_000);
      await expectFinishedCleanly(waiting);
      expect(beta.tools.length - before).toBe(LATE);
      expect(misrouted(beta, 'beta')).toEqual([]);
      const done = await http.get(`/v1/runs/${waiting[0]!}`);
      expect(done.body).toMatchObject({ status: 'done', waitingForWorker: false });
      expect(await failedJobs()).toBe(0);
    },
  );
});
