/**
 * Issue 32 item 20: a run created right after its agent's first advert on a new task queue goes
 * to that task queue, not to `default` (the API's directory of task queues was cached 3 s and
 * answered `default` for an agent it had not seen); and a step job left in a queue no worker
 * serves (the agent moved) is removed when the reconciler runs the run on its agent's queue.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Queue } from 'bullmq';
import { ScriptedModel, type AgentDefinition } from '@baton/core';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { BatonRuntime } from '@baton/runtime';
import { AgentRegistry, shardQueueName } from '@baton/runtime/internal';
import { BatonWorker } from '@baton/worker';
import { BatonClient } from '@baton/client';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';

const KEY = 'fresh-routing-key-123';

function agent(name: string): AgentDefinition {
  return { name, model: new ScriptedModel([{ text: 'done' }]), tools: [] };
}

/** Jobs of the run that wait in `queue` (not yet taken). */
async function waitingJobsOf(queue: Queue, runId: string): Promise<number> {
  const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
  return jobs.filter((j) => (j.data as { runId?: string }).runId === runId).length;
}

describe('routing to a task queue advertised a moment ago (issue 32 item 20)', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const config = testConfig(redisUrl, prefix);
  let client: BatonRuntime;
  let api: RunningApi;
  let baton: BatonClient;
  const workers: BatonWorker[] = [];

  /** What a worker of `taskQueue` writes for `name`, without a worker (no job is taken). */
  const advertise = (name: string, taskQueue: string): Promise<void> =>
    new AgentRegistry([agent(name)]).advertise(
      client.redis,
      client.keys,
      'advert-only',
      Date.now(),
      taskQueue,
    );

  // The client throws on any refusal (its BatonApiError names the code), so a run is created.
  const create = async (name: string): Promise<string> =>
    (
      await baton.runs.create({
        agent: name,
        input: { messages: [{ role: 'user', content: 'hi' }] },
      })
    ).runId;

  const queueOf = (taskQueue: string): Queue =>
    client.queues.queue(shardQueueName(taskQueue, 0, client.queues.shards));

  beforeAll(async () => {
    client = new BatonRuntime({ config, logger: silentLogger });
    const apiConfig = loadApiConfig({
      REDIS_URL: redisUrl,
      BATON_PREFIX: prefix,
      API_KEYS: `tenant-a:${KEY}`,
      LOG_LEVEL: 'silent',
    });
    api = await startApi({ config: apiConfig, port: 0, host: '127.0.0.1', logger: silentLogger });
    baton = new BatonClient({ baseUrl: api.url, apiKey: KEY });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop(500)));
    await api?.close();
    await client?.close();
  });

  it(
    "a run created right after its agent's first advert goes to the agent's task queue",
    { timeout: 60_000 },
    async () => {
      // The API reads the adverts for this run: its directory is fresh when `fresh` appears.
      await advertise('warm', 'default');
      await create('warm');
      await advertise('fresh', 'fresh-q');
      const runId = await create('fresh');
      expect(await waitingJobsOf(queueOf('default'), runId)).toBe(0);
      expect(await waitingJobsOf(queueOf('fresh-q'), runId)).toBe(1);
      // And a worker of that task queue runs it, with no reconciler to rescue it.
      const worker = new BatonWorker({
        config: { ...config, BATON_TASK_QUEUE: 'fresh-q', RECONCILER: false },
        agents: [agent('fresh')],
        logger: silentLogger,
      });
      workers.push(worker);
      await worker.start();
      await waitFor(
        async () => (await client.store.meta(runId))?.status === 'done',
        30_000,
        'the run on fresh-q to finish',
      );
    },
  );

  it(
    'a run created right after its agent moved to another task queue goes to the new one',
    { timeout: 60_000 },
    async () => {
      await advertise('mover', 'default');
      // The API has the agent cached on `default` now (it routed a run there).
      const first = await create('mover');
      expect(await waitingJobsOf(queueOf('default'), first)).toBe(1);
      await advertise('mover', 'mover-q');
      const runId = await create('mover');
      expect(await waitingJobsOf(queueOf('mover-q'), runId)).toBe(1);
      expect(await waitingJobsOf(queueOf('default'), runId)).toBe(0);
    },
  );

  it(
    'a step job left in a queue nobody serves is removed when the reconciler reroutes its run',
    { timeout: 60_000 },
    async () => {
      await advertise('moved', 'default');
      const runId = await create('moved');
      expect(await waitingJobsOf(queueOf('default'), runId)).toBe(1);
      // The agent's workers serve it on another task queue now; nobody serves `default`.
      const worker = new BatonWorker({
        config: { ...config, BATON_TASK_QUEUE: 'moved-q' },
        agents: [agent('moved')],
        logger: silentLogger,
      });
      workers.push(worker);
      await worker.start();
      await waitFor(
        async () => (await client.store.meta(runId))?.status === 'done',
        30_000,
        'the reconciler to run it on moved-q',
      );
      await waitFor(
        async () => (await waitingJobsOf(queueOf('default'), runId)) === 0,
        20_000,
        'the stray job in default to be removed',
      );
    },
  );
});
