/**
 * Issue 32 item 14: two worker pools with different agents and the SAME task queue (both left on
 * `default`). Before, each took the other's jobs and put them back for 2 s, over and over (1,248
 * warnings in one check; a 57 s check took 6 min). Now the pool that comes second serves its
 * agents on a task queue of its own, its adverts say so, and no job ever reaches a worker that
 * cannot run it. When that pool's last worker stops, the next worker of its agents on `default`
 * takes `default` back only if no other set holds it.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pino } from 'pino';
import { ScriptedModel, type AgentDefinition } from '@baton/core';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime } from '@baton/runtime';
import { BatonWorker } from '@baton/worker';
import { ApiClient } from '@baton/testing/api-harness';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const KEY = 'shared-queue-key-123';
const PER_AGENT = 100;

/** What every worker logged at warn and above, as parsed lines. */
const warnings: { msg: string; workerId?: string }[] = [];
const logger = pino(
  { level: 'warn' },
  {
    write: (line: string) => {
      warnings.push(JSON.parse(line) as { msg: string; workerId?: string });
    },
  },
);

const agent = (name: string): AgentDefinition => ({
  name,
  model: new ScriptedModel([{ text: `${name} answered` }]),
  tools: [],
});

describe('two pools with different agents on one task queue (issue 32 item 14)', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const config = testConfig(redisUrl, prefix);
  let client: BatonRuntime;
  let api: RunningApi;
  let http: ApiClient;
  const alphaWorkers: BatonWorker[] = [];
  const betaWorkers: BatonWorker[] = [];

  const startWorker = async (name: string, id: string): Promise<BatonWorker> => {
    const worker = new BatonWorker({
      // Both pools keep the default BATON_TASK_QUEUE: the misconfiguration of the issue.
      config: { ...config, WORKER_ID: id },
      agents: [agent(name)],
      logger,
    });
    await worker.start();
    return worker;
  };

  /** In batches of 25: a loaded machine answers 200 POSTs at once slower than the client waits. */
  const submit = async (name: string, n: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(25, n - i) }, async (_, j) => {
          const r = await http.post<{ runId: string }>('/v1/runs', {
            agent: name,
            input: { messages: [{ role: 'user', content: `${name} ${String(i + j)}` }] },
          });
          expect(r.status, JSON.stringify(r.body)).toBe(202);
          return r.body.runId;
        }),
      );
      ids.push(...batch);
    }
    return ids;
  };

  beforeAll(async () => {
    client = new BatonRuntime({ config, logger: silentLogger });
    api = await startApi({
      config: loadApiConfig({
        REDIS_URL: redisUrl,
        BATON_PREFIX: prefix,
        API_KEYS: `tenant-a:${KEY}`,
        LOG_LEVEL: 'silent',
      }),
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger,
    });
    http = new ApiClient(api.url, KEY);
  });

  afterAll(async () => {
    await Promise.all([...alphaWorkers, ...betaWorkers].map((w) => w.stop(500)));
    await api?.close();
    await client?.close();
  });

  it(
    `${String(2 * PER_AGENT)} runs over both pools: no job reaches a worker that cannot run it`,
    { timeout: 120_000 },
    async () => {
      alphaWorkers.push(
        await startWorker('alpha', 'alpha-0'),
        await startWorker('alpha', 'alpha-1'),
      );
      betaWorkers.push(await startWorker('beta', 'beta-0'), await startWorker('beta', 'beta-1'));
      // The first pool holds `default`; the second serves its agents on a queue of its own.
      expect(alphaWorkers.map((w) => w.taskQueue)).toEqual(['default', 'default']);
      const betaQueue = betaWorkers[0]!.taskQueue;
      expect(betaQueue).toMatch(/^default-[0-9a-f]{8}$/);
      expect(betaWorkers[1]!.taskQueue).toBe(betaQueue);
      expect(
        warnings.filter((w) => w.msg.includes('served by workers of other agents')),
      ).toHaveLength(2);

      const started = Date.now();
      const ids = (
        await Promise.all([submit('alpha', PER_AGENT), submit('beta', PER_AGENT)])
      ).flat();
      await waitFor(
        async () => {
          const metas = await Promise.all(ids.map((id) => client.store.meta(id)));
          return metas.every((m) => m?.status === 'done');
        },
        90_000,
        `${String(ids.length)} runs to finish`,
      );
      console.info(
        `[agent-routing-shared-queue] ${String(ids.length)} runs on two pools sharing a task queue in ${String(Date.now() - started)} ms`,
      );
      // Not one job was put back by a worker that does not run its agent.
      expect(warnings.filter((w) => w.msg.includes('does not run it'))).toEqual([]);
      const moved = warnings.filter((w) => w.msg.includes("moved to its agent's task queue"));
      expect(moved).toEqual([]);
    },
  );

  it(
    "when the pool holding the task queue is gone for good, the other pool's next worker takes it",
    { timeout: 60_000 },
    async () => {
      await Promise.all(alphaWorkers.splice(0).map((w) => w.stop(500)));
      // The last alpha worker freed `default` as it stopped: a new beta worker takes it, and
      // runs still reach beta's workers on both queues (the old ones drain theirs).
      const beta = await startWorker('beta', 'beta-2');
      betaWorkers.push(beta);
      expect(beta.taskQueue).toBe('default');
      const ids = await submit('beta', 20);
      await waitFor(
        async () => {
          const metas = await Promise.all(ids.map((id) => client.store.meta(id)));
          return metas.every((m) => m?.status === 'done');
        },
        45_000,
        'beta runs to finish',
      );
      expect(warnings.filter((w) => w.msg.includes('does not run it'))).toEqual([]);
    },
  );
});

describe('two worker PROCESSES with different agents, both on `default` (issue 32 item 14)', () => {
  afterAll(() => stopAllWorkerProcesses());

  it(
    'every run finishes and no worker puts back a job it cannot run',
    { timeout: 120_000 },
    async () => {
      const redisUrl = inject('redisUrl');
      const prefix = testPrefix();
      const client = new BatonRuntime({
        config: testConfig(redisUrl, prefix),
        logger: silentLogger,
      });
      try {
        // LOG_LEVEL warn: a job put back says so ("... does not run it ...").
        const demo = await spawnWorker({ redisUrl, prefix, agents: 'demo', probes: false });
        const echo = await spawnWorker({
          redisUrl,
          prefix,
          agents: './examples/my-agents.ts:echo',
          probes: false,
        });
        const create = (agent: string, content: string) =>
          client.service.createRun('t-shared', {
            agent,
            input: { messages: [{ role: 'user', content }] },
          });
        const runs = await Promise.all([
          ...Array.from({ length: 30 }, (_, i) => create('echo', `count ${String(i)} words`)),
          ...Array.from({ length: 30 }, (_, i) =>
            create('assistant', `weather in city ${String(i)}?`),
          ),
        ]);
        await waitFor(
          async () => {
            const metas = await Promise.all(runs.map((r) => client.store.meta(r.runId)));
            return metas.every((m) => m?.status === 'done');
          },
          90_000,
          'every run to finish',
        );
        const putBack = [demo, echo].flatMap((w) =>
          w
            .output()
            .split('\n')
            .filter((l) => l.includes('does not run it')),
        );
        expect(putBack).toEqual([]);
        expect(echo.output()).toContain('served by workers of other agents');
      } finally {
        await client.close();
      }
    },
  );
});
