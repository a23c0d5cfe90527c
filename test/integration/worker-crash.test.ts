/**
 * Crash recovery with real worker processes: a worker is SIGKILLed at an exact point (it pauses
 * at a probe, the test kills it there) and another worker process finishes the run. Whatever
 * happened, the run's history must look as if nothing had crashed.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import type { Checkpoint } from '@baton/protocol';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  auditRun,
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

const TENANT = 't-crash';
/** Lock/lease are 2 s, stalled checks and reconciler scans run every 1 s: recovery is a few seconds. */
const RECOVERY_BOUND_MS = 10_000;

interface Cluster {
  readonly prefix: string;
  readonly client: BatonRuntime;
  spawn(opts?: { pause?: Record<string, number>; agents?: string }): Promise<WorkerProcess>;
}

const clients: BatonRuntime[] = [];
const measured: Record<string, number> = {};

function cluster(): Cluster {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
  clients.push(client);
  return {
    prefix,
    client,
    spawn: (opts = {}) =>
      spawnWorker({
        redisUrl,
        prefix,
        agents: opts.agents ?? 'demo,matrix',
        ...(opts.pause ? { pause: opts.pause } : {}),
      }),
  };
}

async function waitDone(c: Cluster, runId: string, timeoutMs = 20_000): Promise<Checkpoint> {
  return waitFor(
    async () => {
      const s = await c.client.store.load(runId);
      return s?.checkpoint.status === 'done' ? s.checkpoint : null;
    },
    timeoutMs,
    `run ${runId} to be done`,
  );
}

async function waitStatus(
  c: Cluster,
  runId: string,
  status: Checkpoint['status'],
  timeoutMs = 20_000,
): Promise<Checkpoint> {
  return waitFor(
    async () => {
      const s = await c.client.store.load(runId);
      return s?.checkpoint.status === status ? s.checkpoint : null;
    },
    timeoutMs,
    `run ${runId} to be ${status}`,
  );
}

/** Resolves when the run has an event of `type` (optionally matching), with the time it was seen. */
async function waitEvent(
  c: Cluster,
  runId: string,
  pred: (e: { type: string; [k: string]: unknown }) => boolean,
  timeoutMs = 20_000,
): Promise<number> {
  await waitFor(
    async () => (await c.client.store.readEvents(runId)).some((e) => pred(e)),
    timeoutMs,
    `an event of run ${runId}`,
  );
  return Date.now();
}

afterEach(async () => {
  await stopAllWorkerProcesses();
});

/**
 * Kills the worker paused at `point` again and again, each time starting a new one that pauses
 * there too, until `ended` holds instead of the new worker reaching the point. Returns how many
 * workers were killed.
 */
async function killEveryWorkerAt(
  c: Cluster,
  current: () => WorkerProcess,
  replace: (w: WorkerProcess) => void,
  point: string,
  match: (p: { [k: string]: unknown }) => boolean,
  ended: () => Promise<boolean>,
  maxKills = 5,
): Promise<number> {
  for (let kills = 1; ; kills += 1) {
    current().kill('SIGKILL');
    await current().waitForExit();
    expect(kills).toBeLessThanOrEqual(maxKills);
    const next = await c.spawn({ pause: { [point]: 60_000 } });
    replace(next);
    // One poll for either outcome, no dangling promise.
    const outcome = await waitFor(
      async () => {
        if (next.probes.some((p) => p.point === point && match(p))) return 'again' as const;
        return (await ended()) ? ('ended' as const) : null;
      },
      15_000,
      `a worker to reach ${point} again, or the end`,
    );
    if (outcome === 'ended') return kills;
  }
}

afterAll(async () => {
  await stopAllWorkerProcesses();
  await Promise.all(clients.map((c) => c.close()));
  // The numbers quoted in the report.
  console.info(`[worker-crash] measured recovery (ms): ${JSON.stringify(measured)}`);
});

describe('SIGKILL of a worker process', () => {
  it('(a) mid-step, before inference: another process finishes the step exactly once', async () => {
    const c = cluster();
    const victim = await c.spawn({ pause: { 'before-infer': 60_000 } });
    const created = await c.client.service.createRun(TENANT, {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Paris?' }] },
    });
    const paused = await victim.onProbe('before-infer', (p) => p['runId'] === created.runId);
    expect(paused['step']).toBe(1);

    const rescuer = await c.spawn();
    victim.kill('SIGKILL');
    const killedAt = (await victim.waitForExit()).at;
    const resumed = await rescuer.onProbe(
      'before-infer',
      (p) => p['runId'] === created.runId && p['step'] === 1,
      RECOVERY_BOUND_MS + 5_000,
    );
    const cp = await waitDone(c, created.runId);
    const doneAt = Date.now();
    measured['a.kill->reinfer'] = resumed.seenAt - killedAt;
    measured['a.kill->done'] = doneAt - killedAt;

    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(c.client, created.runId);
    expect(audit.problems).toEqual([]);
    // Step 1 (weather call) and step 2 (summary): one assistant message each.
    expect(audit.assistantSteps).toEqual([1, 2]);
    expect(cp.messages.filter((m) => m.role === 'assistant')).toHaveLength(2);
    // The step the victim was about to infer was inferred by the rescuer, once.
    expect(
      rescuer.probes
        .filter((p) => p.point === 'before-infer' && p['runId'] === created.runId)
        .map((p) => p['step']),
    ).toEqual([1, 2]);
    expect(resumed.seenAt - killedAt).toBeLessThan(RECOVERY_BOUND_MS);
  });

  it('(b) mid-tool-job in a parallel run: the tool is retried with the same idempotency key', async () => {
    const c = cluster();
    const victim = await c.spawn({ pause: { 'before-tool': 60_000 } });
    const created = await c.client.service.createRun(TENANT, {
      agent: 'parallel-assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const paused = await victim.onProbe('before-tool', (p) => p['runId'] === created.runId);
    expect(paused['inline']).toBe(false);

    const rescuer = await c.spawn();
    victim.kill('SIGKILL');
    const killedAt = (await victim.waitForExit()).at;
    const retried = await rescuer.onProbe(
      'before-tool',
      (p) => p['runId'] === created.runId && p['toolCallId'] === paused['toolCallId'],
      RECOVERY_BOUND_MS + 5_000,
    );
    measured['b.kill->tool-retry'] = retried.seenAt - killedAt;
    expect(retried['idempotencyKey']).toBe(paused['idempotencyKey']);
    expect(retried['attempt']).toBe(paused['attempt']);
    expect(retried.seenAt - killedAt).toBeLessThan(RECOVERY_BOUND_MS);

    // The weather call succeeded; the deploy waits for approval. Approve; the run ends.
    let cp = await waitStatus(c, created.runId, 'waiting');
    measured['b.kill->waiting'] = Date.now() - killedAt;
    expect(cp.calls[paused['toolCallId'] as string]?.status).toBe('succeeded');
    const deploy = Object.values(cp.calls).find((call) => call.status === 'suspended');
    expect(deploy?.name).toBe('deploy_service');
    await c.client.service.submitDecisions(TENANT, created.runId, [
      { toolCallId: deploy!.id, action: 'resume' },
    ]);
    cp = await waitDone(c, created.runId);
    expect(cp.termination).toEqual({ kind: 'natural_end' });

    const audit = await auditRun(c.client, created.runId);
    expect(audit.problems).toEqual([]);
    expect(audit.resultsPerCall).toEqual({ [paused['toolCallId'] as string]: 1, [deploy!.id]: 1 });
    // The weather tool ran once per attempt that got a result: the victim died before executing.
    const weatherRuns = rescuer.probes.filter(
      (p) => p.point === 'before-tool' && p['toolCallId'] === paused['toolCallId'],
    );
    expect(weatherRuns).toHaveLength(1);
    // The deploy tool saw the idempotency key of its (resumed) attempt.
    const deployRun = await rescuer.onProbe('before-tool', (p) => p['toolCallId'] === deploy!.id);
    const deployResult = audit.events.find(
      (e) => e.type === 'tool_call.result' && e['toolCallId'] === deploy!.id,
    );
    expect(JSON.stringify(deployResult)).toContain(`dep-${deployRun['idempotencyKey'] as string}`);
  });

  it('(c) right after a tool result was recorded: the result is applied exactly once', async () => {
    const c = cluster();
    const victim = await c.spawn({ pause: { 'after-tool-recorded': 60_000 } });
    const created = await c.client.service.createRun(TENANT, {
      agent: 'parallel-assistant',
      input: { messages: [{ role: 'user', content: 'weather in Rome?' }] },
    });
    const recorded = await victim.onProbe(
      'after-tool-recorded',
      (p) => p['runId'] === created.runId,
    );
    const executed = await victim.onProbe('before-tool', (p) => p['runId'] === created.runId);
    expect(executed['toolCallId']).toBe(recorded['toolCallId']);

    const rescuer = await c.spawn();
    victim.kill('SIGKILL');
    const killedAt = (await victim.waitForExit()).at;
    const appliedAt = await waitEvent(
      c,
      created.runId,
      (e) => e.type === 'tool_call.result',
      RECOVERY_BOUND_MS + 5_000,
    );
    measured['c.kill->result-applied'] = appliedAt - killedAt;
    const cp = await waitDone(c, created.runId);
    measured['c.kill->done'] = Date.now() - killedAt;

    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(c.client, created.runId);
    expect(audit.problems).toEqual([]);
    expect(audit.resultsPerCall).toEqual({ [recorded['toolCallId'] as string]: 1 });
    expect(cp.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    // The recorded result was reused: the tool did not run again on the rescuer.
    expect(
      rescuer.probes.filter((p) => p.point === 'before-tool' && p['runId'] === created.runId),
    ).toEqual([]);
    expect(appliedAt - killedAt).toBeLessThan(RECOVERY_BOUND_MS);
  });

  it('(b2) mid-tool inside a sequential step job: the inline tool is retried with the same idempotency key', async () => {
    const c = cluster();
    const victim = await c.spawn({ pause: { 'before-tool': 60_000 } });
    const created = await c.client.service.createRun(TENANT, {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Oslo?' }] },
    });
    const paused = await victim.onProbe('before-tool', (p) => p['runId'] === created.runId);
    expect(paused['inline']).toBe(true);
    const rescuer = await c.spawn();
    victim.kill('SIGKILL');
    const killedAt = (await victim.waitForExit()).at;
    const retried = await rescuer.onProbe(
      'before-tool',
      (p) => p['runId'] === created.runId,
      RECOVERY_BOUND_MS + 5_000,
    );
    measured['b2.kill->tool-retry'] = retried.seenAt - killedAt;
    expect(retried['toolCallId']).toBe(paused['toolCallId']);
    expect(retried['idempotencyKey']).toBe(paused['idempotencyKey']);
    const cp = await waitDone(c, created.runId);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(c.client, created.runId);
    expect(audit.problems).toEqual([]);
    expect(audit.assistantSteps).toEqual([1, 2]);
    expect(audit.resultsPerCall).toEqual({ [paused['toolCallId'] as string]: 1 });
    // Step 1 was inferred by the victim and committed before it died: the rescuer did not redo it.
    expect(
      rescuer.probes
        .filter((p) => p.point === 'before-infer' && p['runId'] === created.runId)
        .map((p) => p['step']),
    ).toEqual([2]);
    expect(retried.seenAt - killedAt).toBeLessThan(RECOVERY_BOUND_MS);
  });

  it(
    '(e) a tool job that kills every worker that runs it: the call fails, the run still ends',
    { timeout: 45_000 },
    async () => {
      const c = cluster();
      let victim = await c.spawn({ pause: { 'before-tool': 60_000 } });
      const created = await c.client.service.createRun(TENANT, {
        agent: 'parallel-assistant',
        input: { messages: [{ role: 'user', content: 'weather in Lima?' }] },
      });
      const first = await victim.onProbe('before-tool', (p) => p['runId'] === created.runId);
      const callId = first['toolCallId'] as string;
      const jobId = `tool.${created.runId}.${callId}.${first['attempt'] as number}`;
      // Baton gives up on a job after its worker died more than MAX_STALLS (default 3) times.
      const kills = await killEveryWorkerAt(
        c,
        () => victim,
        (v) => (victim = v),
        'before-tool',
        (p) => p['toolCallId'] === callId,
        async () => {
          // Failed for good; or already failed, applied and removed with the finished run.
          const queue = await c.client.queues.runQueue({
            runId: created.runId,
            agent: 'parallel-assistant',
          });
          const job = await queue.getJob(jobId);
          return job === undefined || (await job.getState()) === 'failed';
        },
      );
      victim.kill('SIGKILL');
      await victim.waitForExit();
      expect(kills).toBe(4);
      await c.spawn(); // a healthy worker (pausing nowhere) takes it from here
      const cp = await waitDone(c, created.runId);
      expect(
        cp.termination,
        JSON.stringify(await c.client.store.readEvents(created.runId)),
      ).toEqual({ kind: 'natural_end' });
      const toolMessages = cp.messages.filter((m) => m.role === 'tool');
      expect(toolMessages).toHaveLength(1);
      expect(toolMessages[0]).toMatchObject({ toolCallId: callId, isError: true });
      const audit = await auditRun(c.client, created.runId);
      expect(audit.problems).toEqual([]);
      expect(audit.resultsPerCall).toEqual({ [callId]: 1 });
      const result = audit.events.find((e) => e.type === 'tool_call.result');
      // A crash is not the tool's failure, and the model is told which it was.
      expect(result?.['outcome']).toMatchObject({
        status: 'failed',
        error: expect.stringMatching(
          /did not finish: the worker running it died or stopped responding \d+ times/,
        ) as unknown,
      });
      // The finished run left no failed job behind.
      await waitFor(
        async () =>
          (await (
            await c.client.queues.runQueue({ runId: created.runId, agent: 'parallel-assistant' })
          ).getJob(jobId))
            ? null
            : true,
        10_000,
        'the failed tool job to be removed',
      );
    },
  );

  it(
    '(f) a step that kills every worker that runs it: the run ends with an error that says so',
    { timeout: 60_000 },
    async () => {
      const c = cluster();
      let victim = await c.spawn({ pause: { 'before-infer': 60_000 } });
      const created = await c.client.service.createRun(TENANT, {
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'weather in Minsk?' }] },
      });
      await victim.onProbe('before-infer', (p) => p['runId'] === created.runId);
      const kills = await killEveryWorkerAt(
        c,
        () => victim,
        (v) => (victim = v),
        'before-infer',
        (p) => p['runId'] === created.runId,
        async () => (await c.client.store.load(created.runId))?.checkpoint.status === 'done',
        10,
      );
      // MAX_STALLS (3) losses are retried; the fourth gives the job up. The reconciler tries a
      // second job (the first may only have shared its worker with the real culprit); when
      // that one is given up too, the run ends.
      expect(kills).toBe(8);
      const cp = (await c.client.store.load(created.runId))!.checkpoint;
      expect(cp.termination).toMatchObject({
        kind: 'error',
        message: expect.stringMatching(
          /stopped its worker \d+ times .* so that it cannot take down more workers/,
        ) as unknown,
      });
      expect((await auditRun(c.client, created.runId)).events.at(-1)?.type).toBe('run.finished');
    },
  );

  it('(d) mid-step of a sequential matrix run with suspensions: decisions after the crash still finish it', async () => {
    const c = cluster();
    const victim = await c.spawn({ pause: { 'before-infer': 60_000 } });
    const agent = 'matrix:sequential:immediate:replay_tool_call';
    const created = await c.client.service.createRun(TENANT, {
      agent,
      input: { messages: [{ role: 'user', content: 'go' }] },
    });
    await victim.onProbe('before-infer', (p) => p['runId'] === created.runId);
    const rescuer = await c.spawn();
    victim.kill('SIGKILL');
    const killedAt = (await victim.waitForExit()).at;
    let cp = await waitStatus(c, created.runId, 'waiting');
    measured['d.kill->waiting'] = Date.now() - killedAt;
    // Resolve every suspension as it appears.
    for (let i = 0; i < 5 && cp.status === 'waiting'; i += 1) {
      const open = Object.values(cp.calls).filter((call) => call.status === 'suspended');
      await c.client.service.submitDecisions(
        TENANT,
        created.runId,
        open.map((call) => ({ toolCallId: call.id, action: 'resume' as const })),
      );
      cp = await waitFor(
        async () => {
          const s = await c.client.store.load(created.runId);
          if (!s) return null;
          const still = Object.values(s.checkpoint.calls).filter(
            (call) => call.status === 'suspended' && open.some((o) => o.id === call.id),
          );
          return still.length === 0 &&
            (s.checkpoint.status === 'done' || s.checkpoint.status === 'waiting')
            ? s.checkpoint
            : null;
        },
        20_000,
        'decisions to be applied',
      );
    }
    expect(cp.status).toBe('done');
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(c.client, created.runId);
    expect(audit.problems).toEqual([]);
    expect(audit.assistantSteps).toEqual([1, 2]);
    expect(rescuer.isAlive()).toBe(true);
  });
});
