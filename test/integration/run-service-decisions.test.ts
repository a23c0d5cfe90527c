/**
 * RunService is the one door into run data, for the API and for an embedder alike: a decision
 * sent to a parent run for its child's call (agent-as-tool) is routed to the child by
 * RunService.submitDecisions itself, not by the HTTP app; it reads each run's conversation at
 * most once; and another tenant cannot reach the run through it. Real worker processes, real
 * Redis; the service is called directly (no HTTP).
 */
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { RunNotFoundError, type Loaded } from '@baton/runtime';
import { startChildStack, finalAnswer, type ChildStack } from '@baton/testing/child-stack';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 'tree';
let s: ChildStack;

beforeAll(async () => {
  s = await startChildStack(inject('redisUrl'));
  await s.spawn();
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s.stop();
});

/** The parent, once its one child waits for a decision on its own call. */
async function startTree(
  input: string,
): Promise<{ runId: string; childId: string; toolCallId: string }> {
  const { runId } = await s.rt.service.createRun(TENANT, {
    agent: 'tree-sequential',
    input: { messages: [{ role: 'user', content: input }] },
  });
  const parent = await s.waitFor(
    runId,
    (cp) => Object.values(cp.calls).some((c) => c.child !== undefined),
    'to start its child',
  );
  const childId = Object.values(parent.calls).find((c) => c.child)!.child!.runId;
  const child = await s.waitFor(
    childId,
    (cp) => Object.values(cp.calls).some((c) => c.status === 'suspended'),
    'to wait for its approval',
  );
  const toolCallId = Object.values(child.calls).find((c) => c.status === 'suspended')!.id;
  return { runId, childId, toolCallId };
}

describe('RunService.submitDecisions on a run tree', () => {
  it("routes a decision sent to the parent for its child's call to the child", async () => {
    const { runId, childId, toolCallId } = await startTree('call approval');
    const reads = vi.spyOn(s.rt.store, 'readStored');
    let result;
    try {
      result = await s.rt.service.submitDecisions(TENANT, runId, [
        { toolCallId, action: 'resume' },
      ]);
    } finally {
      reads.mockRestore();
    }
    expect(result.accepted).toEqual([]);
    expect(result.routed).toEqual([
      { runId: childId, accepted: [expect.any(String)], duplicates: [] },
    ]);
    // Each run's conversation (checkpoint with messages) was read at most once.
    const perRun = new Map<string, number>();
    for (const [id] of reads.mock.calls) perRun.set(id, (perRun.get(id) ?? 0) + 1);
    for (const [id, n] of perRun) expect({ id, n }).toEqual({ id, n: 1 });
    const cp = await s.waitDone(runId);
    expect(finalAnswer(cp)).toBe('results: approval="child approved and done"');
  });

  it("another tenant reaches neither the parent nor, through it, the child's call", async () => {
    const { runId, childId, toolCallId } = await startTree('call approval');
    await expect(
      s.rt.service.submitDecisions('other', runId, [{ toolCallId, action: 'resume' }]),
    ).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(
      s.rt.service.submitDecisions('other', childId, [{ toolCallId, action: 'resume' }]),
    ).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(s.rt.service.lastSeq('other', childId)).rejects.toBeInstanceOf(RunNotFoundError);
    expect(await s.rt.service.statusOf('other', childId)).toBeNull();
    expect(await s.rt.service.follow('other', childId)).toBe('hidden');
    expect(await s.rt.service.statusOf(TENANT, childId)).toBe('waiting');
    await s.rt.service.submitDecisions(TENANT, runId, [{ toolCallId, action: 'resume' }]);
    await s.waitDone(runId);
  });
});

describe('RunService.submitDecisions with the run the caller just read', () => {
  /** A run whose own call waits for a decision, as the service returned it. */
  async function waitingRun(): Promise<{ runId: string; toolCallId: string; loaded: Loaded }> {
    const { runId } = await s.rt.service.createRun(TENANT, {
      agent: 'child-approval',
      input: { messages: [{ role: 'user', content: 'approve?' }] },
    });
    const cp = await s.waitFor(
      runId,
      (c) => c.status === 'waiting' && Object.values(c.calls).some((x) => x.status === 'suspended'),
      'to wait for its approval',
    );
    const toolCallId = Object.values(cp.calls).find((c) => c.status === 'suspended')!.id;
    const { checkpoint, version } = await s.rt.service.loadWithEvents(TENANT, runId);
    return { runId, toolCallId, loaded: { checkpoint, version } };
  }

  async function readsDuring(work: () => Promise<unknown>): Promise<number> {
    const reads = vi.spyOn(s.rt.store, 'readStored');
    try {
      await work();
      return reads.mock.calls.length;
    } finally {
      reads.mockRestore();
    }
  }

  it('does not read the conversation again; a copy of it is not trusted and the run is read', async () => {
    const first = await waitingRun();
    expect(
      await readsDuring(() =>
        s.rt.service.submitDecisions(
          TENANT,
          first.runId,
          [{ toolCallId: first.toolCallId, action: 'resume' }],
          { current: first.loaded },
        ),
      ),
    ).toBe(0);
    const second = await waitingRun();
    const copy = { ...second.loaded, checkpoint: { ...second.loaded.checkpoint } };
    expect(
      await readsDuring(() =>
        s.rt.service.submitDecisions(
          TENANT,
          second.runId,
          [{ toolCallId: second.toolCallId, action: 'resume' }],
          { current: copy },
        ),
      ),
    ).toBe(1);
    for (const runId of [first.runId, second.runId])
      expect((await s.waitDone(runId)).termination).toEqual({ kind: 'natural_end' });
  });
});
