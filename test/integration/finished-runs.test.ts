/**
 * A finished run holds no lease and leaves no job behind, whatever dies when: a step job of a
 * finished run that was redelivered (its worker died) meets a lease nobody will release; a worker
 * dies between failing a job and recording that failure with the run.
 */
import { Redis } from 'ioredis';
import { Worker, type Job, type Queue } from 'bullmq';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 't-finished';
const clients: BatonRuntime[] = [];
const connections: Redis[] = [];

afterEach(async () => {
  await stopAllWorkerProcesses();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(connections.map((c) => c.quit()));
});

function cluster(): { prefix: string; redisUrl: string; client: BatonRuntime } {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
  clients.push(client);
  return { prefix, redisUrl, client };
}

async function finishedRun(c: ReturnType<typeof cluster>, agent: string): Promise<string> {
  const { runId } = await c.client.service.createRun(TENANT, {
    agent,
    input: { messages: [{ role: 'user', content: 'hello' }] },
  });
  await waitFor(
    async () => (await c.client.store.meta(runId))?.status === 'done',
    20_000,
    `run ${runId} to finish`,
  );
  return runId;
}

/**
 * Takes the next job of `queue` as a worker that then dies: it stops renewing the job's lock,
 * so the job is redelivered by the stall check of the next worker, as after a SIGKILL.
 */
async function takeAndDie(redisUrl: string, queue: Queue): Promise<Job> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  connections.push(connection);
  let taken: (job: Job) => void = () => undefined;
  const got = new Promise<Job>((resolve) => (taken = resolve));
  const dying = new Worker(
    queue.name,
    (job) => {
      taken(job);
      return new Promise<never>(() => undefined);
    },
    { connection, prefix: queue.opts.prefix ?? '', lockDuration: 1_000, stalledInterval: 60_000 },
  );
  const job = await got;
  await dying.close(true);
  return job;
}

describe('a finished run', () => {
  it('a redelivered step job of a finished run completes, whoever holds its lease', async () => {
    const c = cluster();
    const worker = await spawnWorker({ redisUrl: c.redisUrl, prefix: c.prefix, probes: false });
    const runId = await finishedRun(c, 'assistant');
    worker.kill('SIGKILL');
    await worker.waitForExit();
    // A lease nobody will release for long (what a finishing commit used to stretch to the
    // retention when its holder died before releasing it).
    await c.client.redis.set(c.client.keys.run(runId).lease, 'a-dead-holder', 'PX', 600_000);
    const meta = (await c.client.store.meta(runId))!;
    const jobId = await c.client.queues.enqueueStep(
      { runId, tenantId: TENANT, agent: 'assistant' },
      'continue',
      meta.version,
      true,
    );
    const queue = await c.client.queues.runQueue({ runId, agent: 'assistant' });
    const taken = await takeAndDie(c.redisUrl, queue);
    expect(taken.id).toBe(jobId);
    await spawnWorker({ redisUrl: c.redisUrl, prefix: c.prefix, probes: false });
    // Redelivered (a retried job), it meets the lease: it must end, not wait for the lease again
    // and again.
    const state = await waitFor(
      async () => {
        const job = await queue.getJob(jobId);
        const s = job ? await job.getState() : 'gone';
        return s === 'completed' || s === 'gone' ? s : null;
      },
      20_000,
      'the redelivered step job to end',
    );
    expect(state).not.toBe('failed');
  });

  it(
    'a step job given up by a worker that died before recording it is removed once its run finished',
    { timeout: 90_000 },
    async () => {
      const c = cluster();
      const spawn = (pause: Record<string, number> = {}) =>
        spawnWorker({ redisUrl: c.redisUrl, prefix: c.prefix, env: { MAX_STALLS: '1' }, pause });
      // The step job's worker dies twice (MAX_STALLS = 1): the job is given up...
      let victim = await spawn({ 'before-infer': 60_000 });
      const { runId } = await c.client.service.createRun(TENANT, {
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'weather in Minsk?' }] },
      });
      for (let kill = 0; kill < 2; kill += 1) {
        if (kill > 0) victim = await spawn({ 'before-infer': 60_000 });
        await victim.onProbe('before-infer', (p) => p['runId'] === runId);
        victim.kill('SIGKILL');
        await victim.waitForExit();
      }
      // ...by a worker that dies before its `failed` handler keeps the job with the run.
      victim = await spawn({ 'before-failed-job-record': 60_000 });
      const given = await victim.onProbe('before-failed-job-record', (p) => p['runId'] === runId);
      const steps = await c.client.queues.runQueue({ runId, agent: 'assistant' });
      const jobId = given['jobId'] as string;
      expect(await (await steps.getJob(jobId))?.getState()).toBe('failed');
      victim.kill('SIGKILL');
      await victim.waitForExit();
      // The reconciler gives the run a fresh pass; it finishes.
      await spawn();
      await waitFor(
        async () => (await c.client.store.meta(runId))?.status === 'done',
        30_000,
        `run ${runId} to finish`,
      );
      await waitFor(
        async () => ((await steps.getJob(jobId)) ? null : true),
        20_000,
        'the failed step job of the finished run to be removed',
      );
    },
  );
});
