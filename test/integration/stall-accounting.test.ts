/**
 * Only a worker that died counts toward MAX_STALLS. A worker that is alive but misses its lock
 * renewals (paused with SIGSTOP here; a loaded host or a blocked event loop alike) loses the job
 * to another worker, and that is not a death: with MAX_STALLS = 1, two such losses must not give
 * the job up, while two workers killed in the same places do. And only an attempt that started
 * counts: a job its worker held unstarted (in the process gate) is requeued when that worker dies.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  auditRun,
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

const TENANT = 't-stalls';
const AGENT = 'parallel-assistant';
const clients: BatonRuntime[] = [];

afterEach(async () => {
  await stopAllWorkerProcesses();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});

/**
 * Runs one tool call whose job loses its worker twice at `before-tool`, each worker treated
 * with `lose` (SIGSTOP: alive; SIGKILL: dead); a third worker takes it from there. Returns the
 * call's result outcome.
 */
async function toolJobLostTwice(
  lose: (w: WorkerProcess) => Promise<void>,
): Promise<Record<string, unknown>> {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
  clients.push(client);
  const spawn = (pause: Record<string, number> = {}) =>
    spawnWorker({
      redisUrl,
      prefix,
      pause,
      // A heartbeat outlives the pauses below: a paused worker is known to be alive.
      env: { MAX_STALLS: '1', AGENT_HEARTBEAT_TTL_MS: '120000' },
    });
  let holder = await spawn({ 'before-tool': 120_000 });
  const { runId } = await client.service.createRun(TENANT, {
    agent: AGENT,
    input: { messages: [{ role: 'user', content: 'weather in Lima?' }] },
  });
  for (let loss = 0; loss < 2; loss += 1) {
    if (loss > 0) holder = await spawn({ 'before-tool': 120_000 });
    await holder.onProbe('before-tool', (p) => p['runId'] === runId);
    await lose(holder);
  }
  await spawn();
  const done = await waitFor(
    async () => {
      const stored = await client.store.load(runId);
      return stored?.checkpoint.status === 'done' ? stored.checkpoint : null;
    },
    30_000,
    `run ${runId} to finish`,
  );
  expect(done.termination).toEqual({ kind: 'natural_end' });
  const audit = await auditRun(client, runId);
  expect(audit.problems).toEqual([]);
  const result = audit.events.find((e) => e.type === 'tool_call.result');
  return result?.['outcome'] as Record<string, unknown>;
}

describe('lost job locks', () => {
  it('a live worker that missed its lock renewals (SIGSTOP) is not counted as dead', async () => {
    const paused: WorkerProcess[] = [];
    const outcome = await toolJobLostTwice(async (w) => {
      w.kill('SIGSTOP');
      paused.push(w);
    });
    // The tool ran; it did not fail as if its workers had died.
    expect(outcome).toMatchObject({ status: 'succeeded' });
    for (const w of paused) w.kill('SIGCONT');
  }, 90_000);

  it('a worker that was killed still is: the job is given up after MAX_STALLS deaths', async () => {
    const outcome = await toolJobLostTwice(async (w) => {
      w.kill('SIGKILL');
      await w.waitForExit();
    });
    expect(outcome).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/died or stopped responding/) as unknown,
    });
  }, 90_000);
});

describe('jobs that never started', () => {
  it('a tool job held behind another in its worker is not failed when that worker is killed', async () => {
    // TOOL_CONCURRENCY=1: each worker runs one of the round's two tool jobs (paused at
    // before-tool, then killed) and holds the other, fetched, in its process gate. Four kills,
    // MAX_STALLS 3: only an attempt that started counts as a death, so a call fails only if its
    // job was running at more than MAX_STALLS of the kills. (The held job used to count a death
    // at every kill: 4 > 3, failed with 0 executions.)
    const maxStalls = 3;
    const kills = 4;
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
    clients.push(client);
    const spawn = (pause: Record<string, number> = {}) =>
      spawnWorker({
        redisUrl,
        prefix,
        agents: 'children',
        pause,
        env: { TOOL_CONCURRENCY: '1', MAX_STALLS: String(maxStalls) },
      });
    let holder = await spawn({ 'before-tool': 120_000 });
    const { runId } = await client.service.createRun(TENANT, {
      agent: 'tree-stream',
      input: { messages: [{ role: 'user', content: 'call echo,echo' }] },
    });
    const queue = await client.queues.runQueue({ runId, agent: 'tree-stream' });
    const started: Record<string, number> = {};
    for (let kill = 1; kill <= kills; kill += 1) {
      if (kill > 1) holder = await spawn({ 'before-tool': 120_000 });
      const probe = await holder.onProbe('before-tool', (p) => p['runId'] === runId, 60_000);
      const call = String(probe['toolCallId']);
      started[call] = (started[call] ?? 0) + 1;
      // Both of the round's tool jobs are taken by this worker (fetched for the kill-th time):
      // one runs, the other waits in the gate.
      await waitFor(
        async () => {
          const active = (await queue.getJobs(['active'])).filter(
            (j) => (j.data as { runId?: string; kind?: string }).runId === runId,
          );
          return active.length === 2 && active.every((j) => j.attemptsStarted >= kill);
        },
        30_000,
        'both tool jobs held by the worker',
      );
      holder.kill('SIGKILL');
      await holder.waitForExit();
    }
    await spawn();
    await waitFor(
      async () => (await client.store.meta(runId))?.status === 'done',
      60_000,
      `run ${runId} to finish`,
    );
    const audit = await auditRun(client, runId);
    expect(audit.problems).toEqual([]);
    const outcomes = audit.events
      .filter((e) => e.type === 'tool_call.result')
      .map((e) => ({
        call: String(e['toolCallId']),
        status: (e['outcome'] as { status: string }).status,
      }));
    expect(outcomes).toHaveLength(2);
    for (const { call, status } of outcomes)
      expect({ call, status, started: started[call] ?? 0 }).toEqual({
        call,
        started: started[call] ?? 0,
        status: (started[call] ?? 0) > maxStalls ? 'failed' : 'succeeded',
      });
  }, 240_000);
});
