/**
 * Fencing with real worker processes: a worker is frozen (SIGSTOP: a GC pause, a VM steal, a
 * partition) at an exact point while it holds a run, past its lease; another worker takes the run
 * over; then the frozen one is resumed (SIGCONT) and carries on from where it stopped. Whatever it
 * tries must be refused inside Redis: no duplicated message or event, nothing after run.finished,
 * and the run finishes as if the pause had never happened.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/worker';
import type { Checkpoint, RunEvent } from '@baton/protocol';
import { silentLogger, testConfig, testPrefix, waitFor } from '../support/worker-harness.ts';
import {
  auditRun,
  spawnWorker,
  stopAllWorkerProcesses,
  type ProbeEvent,
  type WorkerProcess,
} from '../support/worker-process.ts';

const TENANT = 't-fence';
const clients: BatonRuntime[] = [];

afterEach(async () => {
  await stopAllWorkerProcesses();
});

afterAll(async () => {
  await stopAllWorkerProcesses();
  await Promise.all(clients.map((c) => c.close()));
});

function cluster() {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const client = new BatonRuntime(testConfig(redisUrl, prefix), silentLogger);
  clients.push(client);
  return {
    client,
    spawn: (pause: Record<string, number> = {}) =>
      spawnWorker({ redisUrl, prefix, agents: 'demo', pause }),
  };
}

async function statusOf(client: BatonRuntime, runId: string): Promise<Checkpoint | null> {
  return (await client.store.load(runId))?.checkpoint ?? null;
}

async function waitStatus(
  client: BatonRuntime,
  runId: string,
  status: Checkpoint['status'],
): Promise<Checkpoint> {
  return waitFor(
    async () => {
      const cp = await statusOf(client, runId);
      return cp?.status === status ? cp : null;
    },
    30_000,
    `run ${runId} to be ${status}`,
  );
}

/**
 * Freezes `frozen` (already paused at its probe), lets `rescue` run until `until` holds, resumes
 * the frozen worker and gives it time to try its next writes. Returns the events as they were
 * before the resume, to compare with what is there after.
 */
async function freezeAndResume(
  frozen: WorkerProcess,
  client: BatonRuntime,
  runId: string,
  until: () => Promise<boolean>,
  expectRefusal: boolean,
): Promise<{ before: RunEvent[] }> {
  frozen.kill('SIGSTOP');
  await cluster0.spawn(); // the rescuer: no pauses
  await waitFor(async () => ((await until()) ? true : null), 30_000, 'the rescuer to move on');
  const before = await client.store.readEvents(runId);
  frozen.kill('SIGCONT');
  if (expectRefusal)
    await waitFor(
      async () => (frozen.output().includes('lease lost') ? true : null),
      15_000,
      'the resumed worker to learn that it lost the run',
    );
  else await new Promise((r) => setTimeout(r, 1_500));
  return { before };
}

// One cluster per test; the helper above spawns the rescuer into the current one. The frozen
// worker pauses at its probe for less time than it stays frozen (timers count the frozen time),
// so it carries on the moment it is resumed.
let cluster0: ReturnType<typeof cluster>;

function onRun(runId: string): (p: ProbeEvent) => boolean {
  return (p) => p['runId'] === runId;
}

describe('a worker paused past its lease (SIGSTOP) and resumed', () => {
  it('inside a model call: its late deltas and inference commit are refused; the run finishes once', async () => {
    cluster0 = cluster();
    const { client } = cluster0;
    const frozen = await cluster0.spawn({ 'after-delta': 2_500 });
    const created = await client.service.createRun(TENANT, {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const probe = await frozen.onProbe('after-delta', onRun(created.runId));
    expect(probe['step']).toBe(1);
    // The rescuer re-infers step 1 and runs the round until the deploy approval.
    const { before } = await freezeAndResume(
      frozen,
      client,
      created.runId,
      async () => (await statusOf(client, created.runId))?.status === 'waiting',
      true,
    );
    // Nothing the resumed worker tried reached the log or the checkpoint.
    expect(await client.store.readEvents(created.runId)).toEqual(before);
    const waiting = (await statusOf(client, created.runId))!;
    const deploy = Object.values(waiting.calls).find((c) => c.status === 'suspended')!;
    await client.service.submitDecisions(TENANT, created.runId, [
      { toolCallId: deploy.id, action: 'resume' },
    ]);
    const cp = await waitStatus(client, created.runId, 'done');
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(client, created.runId);
    expect(audit.problems).toEqual([]);
    expect(audit.assistantSteps).toEqual([1, 2]);
    // The frozen attempt's deltas were superseded: the rescuer's attempt announced a reset.
    expect(audit.events.some((e) => e.type === 'inference.reset' && e['step'] === 1)).toBe(true);
  });

  it('inside a sequential tool: the tool result is applied once, the step finishes once', async () => {
    cluster0 = cluster();
    const { client } = cluster0;
    const frozen = await cluster0.spawn({ 'before-tool': 2_500 });
    const created = await client.service.createRun(TENANT, {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Lisbon?' }] },
    });
    await frozen.onProbe('before-tool', onRun(created.runId));
    const { before } = await freezeAndResume(
      frozen,
      client,
      created.runId,
      async () => (await statusOf(client, created.runId))?.status === 'done',
      true,
    );
    expect(await client.store.readEvents(created.runId)).toEqual(before);
    const cp = (await statusOf(client, created.runId))!;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(cp.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    const thread = await client.threads.load(TENANT, cp.identity.threadId);
    expect(thread.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect((await auditRun(client, created.runId)).problems).toEqual([]);
  });

  it('inside a parallel tool job: the redelivered job and the resumed one yield one result', async () => {
    cluster0 = cluster();
    const { client } = cluster0;
    const frozen = await cluster0.spawn({ 'before-tool': 2_500 });
    const created = await client.service.createRun(TENANT, {
      agent: 'parallel-assistant',
      input: { messages: [{ role: 'user', content: 'weather in Oslo?' }] },
    });
    await frozen.onProbe('before-tool', onRun(created.runId));
    const { before } = await freezeAndResume(
      frozen,
      client,
      created.runId,
      async () => (await statusOf(client, created.runId))?.status === 'done',
      false,
    );
    expect(await client.store.readEvents(created.runId)).toEqual(before);
    const audit = await auditRun(client, created.runId);
    expect(audit.problems).toEqual([]);
    expect(Object.values(audit.resultsPerCall)).toEqual([1]);
  });

  it('right after a commit: its next commit is fenced, nothing lands after run.finished', async () => {
    cluster0 = cluster();
    const { client } = cluster0;
    const frozen = await cluster0.spawn({ 'after-commit': 2_500 });
    const created = await client.service.createRun(TENANT, {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Rome?' }] },
    });
    await frozen.onProbe(
      'after-commit',
      (p) => p['runId'] === created.runId && p['committed'] === true,
    );
    const { before } = await freezeAndResume(
      frozen,
      client,
      created.runId,
      async () => (await statusOf(client, created.runId))?.status === 'done',
      true,
    );
    const after = await client.store.readEvents(created.runId);
    expect(after).toEqual(before);
    expect(after.at(-1)?.type).toBe('run.finished');
    expect((await auditRun(client, created.runId)).problems).toEqual([]);
  });
});
