/**
 * Fencing with real worker processes: a worker is frozen (SIGSTOP: a GC pause, a VM steal, a
 * partition) at an exact point while it holds a run, past its lease; another worker takes the run
 * over; then the frozen one is resumed (SIGCONT) and carries on from where it stopped. Whatever it
 * tries must be refused inside Redis: no duplicated message or event, nothing after run.finished,
 * and the run finishes as if the pause had never happened.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import type { Checkpoint, RunEvent } from '@baton/protocol';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  auditRun,
  spawnWorker,
  stopAllWorkerProcesses,
  type ProbeEvent,
} from '@baton/testing/worker-process';

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
  const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
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
 * A run of `agent` started on a cluster whose first worker pauses at `point` (for less time than
 * it stays frozen: timers count the frozen time, so it carries on the moment it is resumed). The
 * worker is frozen there (SIGSTOP), a rescuer is started and runs until `until` holds, then the
 * frozen worker is resumed and given time to try its next writes (`expectRefusal`: until it logs
 * that it lost the run). Returns the events as they were before the resume, to compare with
 * what is there after.
 */
async function frozenAt(opts: {
  agent: string;
  content: string;
  point: string;
  match?: (p: ProbeEvent) => boolean;
  until: 'waiting' | 'done';
  expectRefusal: boolean;
}): Promise<{ client: BatonRuntime; runId: string; before: RunEvent[]; probe: ProbeEvent }> {
  const c = cluster();
  const { client } = c;
  const frozen = await c.spawn({ [opts.point]: 2_500 });
  const { runId } = await client.service.createRun(TENANT, {
    agent: opts.agent,
    input: { messages: [{ role: 'user', content: opts.content }] },
  });
  const probe = await frozen.onProbe(
    opts.point,
    (p) => p['runId'] === runId && (opts.match?.(p) ?? true),
  );
  frozen.kill('SIGSTOP');
  await c.spawn(); // the rescuer: no pauses
  await waitStatus(client, runId, opts.until);
  const before = await client.store.readEvents(runId);
  frozen.kill('SIGCONT');
  if (opts.expectRefusal)
    await waitFor(
      async () => (frozen.output().includes('lease lost') ? true : null),
      15_000,
      'the resumed worker to learn that it lost the run',
    );
  else await new Promise((r) => setTimeout(r, 1_500));
  return { client, runId, before, probe };
}

describe('a worker paused past its lease (SIGSTOP) and resumed', () => {
  it('inside a model call: its late deltas and inference commit are refused; the run finishes once', async () => {
    // The rescuer re-infers step 1 and runs the round until the deploy approval.
    const { client, runId, before, probe } = await frozenAt({
      agent: 'assistant',
      content: 'deploy please',
      point: 'after-delta',
      until: 'waiting',
      expectRefusal: true,
    });
    expect(probe['step']).toBe(1);
    // Nothing the resumed worker tried reached the log or the checkpoint.
    expect(await client.store.readEvents(runId)).toEqual(before);
    const waiting = (await statusOf(client, runId))!;
    const deploy = Object.values(waiting.calls).find((c) => c.status === 'suspended')!;
    await client.service.submitDecisions(TENANT, runId, [
      { toolCallId: deploy.id, action: 'resume' },
    ]);
    const cp = await waitStatus(client, runId, 'done');
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    const audit = await auditRun(client, runId);
    expect(audit.problems).toEqual([]);
    expect(audit.assistantSteps).toEqual([1, 2]);
    // The frozen attempt's deltas were superseded: the rescuer's attempt announced a reset.
    expect(audit.events.some((e) => e.type === 'inference.reset' && e['step'] === 1)).toBe(true);
  });

  it('inside a sequential tool: the tool result is applied once, the step finishes once', async () => {
    const { client, runId, before } = await frozenAt({
      agent: 'assistant',
      content: 'weather in Lisbon?',
      point: 'before-tool',
      until: 'done',
      expectRefusal: true,
    });
    expect(await client.store.readEvents(runId)).toEqual(before);
    const cp = (await statusOf(client, runId))!;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(cp.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    const thread = await client.threads.load(TENANT, cp.identity.threadId);
    expect(thread.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect((await auditRun(client, runId)).problems).toEqual([]);
  });

  it('inside a parallel tool job: the redelivered job and the resumed one yield one result', async () => {
    const { client, runId, before } = await frozenAt({
      agent: 'parallel-assistant',
      content: 'weather in Oslo?',
      point: 'before-tool',
      until: 'done',
      expectRefusal: false,
    });
    expect(await client.store.readEvents(runId)).toEqual(before);
    const audit = await auditRun(client, runId);
    expect(audit.problems).toEqual([]);
    expect(Object.values(audit.resultsPerCall)).toEqual([1]);
  });

  it('right after a commit: its next commit is fenced, nothing lands after run.finished', async () => {
    const { client, runId, before } = await frozenAt({
      agent: 'assistant',
      content: 'weather in Rome?',
      point: 'after-commit',
      match: (p) => p['committed'] === true,
      until: 'done',
      expectRefusal: true,
    });
    const after = await client.store.readEvents(runId);
    expect(after).toEqual(before);
    expect(after.at(-1)?.type).toBe('run.finished');
    expect((await auditRun(client, runId)).problems).toEqual([]);
  });
});
