/**
 * Child runs under SIGKILL: a worker process is killed at the two critical points of the
 * hand-off (right after it created a child run; right after a child's final commit, before the
 * result reached the parent). Another worker process finishes the tree, with exactly one child
 * per call and no duplicated event in any run.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { startChildStack, finalAnswer, type ChildStack } from '@baton/testing/child-stack';
import type { Checkpoint } from '@baton/protocol';
import { auditRun, stopAllWorkerProcesses } from '@baton/testing/worker-process';
import { waitFor } from '@baton/testing/worker-harness';

const stacks: ChildStack[] = [];
const measured: Record<string, number> = {};

afterEach(async () => {
  await stopAllWorkerProcesses();
});

afterAll(async () => {
  await Promise.all(stacks.map((s) => s.stop()));
  console.info(`[child-runs-crash] measured recovery (ms): ${JSON.stringify(measured)}`);
});

async function stack(): Promise<ChildStack> {
  const s = await startChildStack(inject('redisUrl'));
  stacks.push(s);
  return s;
}

/** Every run of the tree is audited: gapless events, one result per call, one end. */
async function expectCleanTree(s: ChildStack, runId: string, children: number): Promise<void> {
  expect((await auditRun(s.rt, runId)).problems).toEqual([]);
  const kids = await s.childrenOf(runId);
  expect(kids).toHaveLength(children);
  for (const kid of kids) expect((await auditRun(s.rt, kid.identity.runId)).problems).toEqual([]);
  const events = await s.events(runId);
  expect(events.filter((e) => e.type === 'child_run.linked')).toHaveLength(children);
  expect(events.filter((e) => e.type === 'child_run.finished')).toHaveLength(children);
}

describe('SIGKILL around child runs', () => {
  it.each([
    ['sequential', 'before-child-start'],
    ['stream', 'before-child-start'],
    ['sequential', 'after-child-start'],
    ['stream', 'after-child-start'],
  ])(
    '%s: killed at %s (the link is committed), the tree finishes with one child per call',
    async (mode, point) => {
      const s = await stack();
      const victim = await s.spawn({ pause: { [point]: 60_000 } });
      const { runId } = await s.client.createRun(`tree-${mode}`, 'call answer,answer');
      await victim.onProbe(point, (p) => p['runId'] === runId);
      const rescuer = await s.spawn();
      victim.kill('SIGKILL');
      const killedAt = (await victim.waitForExit()).at;
      const cp = await s.waitDone(runId);
      measured[`${mode}.${point}.kill->done`] = Date.now() - killedAt;
      expect(rescuer.isAlive()).toBe(true);
      expect(finalAnswer(cp)).toBe(
        'results: answer="answered \\"task 0\\"" | answer="answered \\"task 1\\""',
      );
      await expectCleanTree(s, runId, 2);
    },
  );

  it.each(['sequential', 'batch'])(
    "%s: killed after the child's final commit, before delivery: the result still arrives once",
    async (mode) => {
      const s = await stack();
      const victim = await s.spawn({ pause: { 'before-child-deliver': 60_000 } });
      const { runId } = await s.client.createRun(`tree-${mode}`, 'call answer');
      const paused = await victim.onProbe(
        'before-child-deliver',
        (p) => p['parentRunId'] === runId,
      );
      // The child is done, its parent has not heard of it.
      const child = await s.load(paused['runId'] as string);
      expect(child?.status).toBe('done');
      expect((await s.load(runId))?.calls['call_1_1']?.status).toBe('running');
      await s.spawn();
      victim.kill('SIGKILL');
      const killedAt = (await victim.waitForExit()).at;
      const cp = await s.waitDone(runId);
      measured[`${mode}.before-child-deliver.kill->done`] = Date.now() - killedAt;
      expect(finalAnswer(cp)).toBe('results: answer="answered \\"task 0\\""');
      await expectCleanTree(s, runId, 1);
    },
  );

  it('a parent whose worker dies while its child waits for a decision: nothing to redo', async () => {
    const s = await stack();
    const first = await s.spawn();
    const { runId } = await s.client.createRun('tree-batch', 'call approval,answer');
    const awaited = await s.waitFor(
      runId,
      (cp) => cp.calls['call_1_2']?.status === 'succeeded',
      'answer applied',
    );
    expect(awaited.calls['call_1_1']?.status).toBe('running');
    first.kill('SIGKILL');
    await first.waitForExit();
    await s.spawn();
    const view = await s.client.get(`/v1/runs/${runId}`);
    const call = (view.body as { await: { calls: { toolCallId: string }[] } }).await.calls[0]!;
    const decided = await s.client.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ toolCallId: call.toolCallId, action: 'resume' }],
    });
    expect(decided.status).toBe(202);
    const cp = await s.waitDone(runId);
    expect(finalAnswer(cp)).toBe(
      'results: approval="child approved and done" | answer="answered \\"task 1\\""',
    );
    await expectCleanTree(s, runId, 2);
  });

  it("a cancelled parent whose child waits for a decision ends, with its child, though the cancel's job is lost", async () => {
    const s = await stack();
    const first = await s.spawn();
    const { runId } = await s.client.createRun('tree-sequential', 'call approval');
    const [child] = await waitForChildren(s, runId, (kid) => kid.status === 'waiting');
    first.kill('SIGKILL');
    await first.waitForExit();
    const cancelled = await s.client.post(`/v1/runs/${runId}/cancel`, {});
    expect(cancelled.status).toBe(202);
    // The cancel's step job is lost (as if its worker gave it up): only the reconciler is left.
    const queue = await s.rt.queues.runQueue({ runId, agent: 'tree-sequential' });
    const queued = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
    const ours = queued.filter((j) => (j.data as { runId?: string }).runId === runId);
    expect(ours.length).toBeGreaterThan(0);
    for (const job of ours) await job.remove();
    await s.spawn();
    const parent = await s.waitDone(runId);
    expect(parent.termination).toEqual({ kind: 'cancelled' });
    const kid = await s.waitDone(child!.identity.runId);
    expect(kid.termination).toEqual({ kind: 'cancelled' });
  });
});

/** The parent's children, once there is at least one and all satisfy `pred`. */
async function waitForChildren(
  s: ChildStack,
  runId: string,
  pred: (kid: Checkpoint) => boolean,
): Promise<Checkpoint[]> {
  return waitFor(
    async () => {
      const kids = await s.childrenOf(runId);
      return kids.length > 0 && kids.every(pred) ? kids : null;
    },
    30_000,
    `children of ${runId}`,
  );
}
