/* eslint-disable @typescript-eslint/no-unsafe-member-access -- HTTP replies are untyped JSON; each test asserts their shape */
/**
 * Child runs (agent-as-tool) with real worker processes, a real API and a real Redis: an agent
 * tool's call starts a child run whose answer, error or cancellation becomes the call's result;
 * the parent holds no job meanwhile; approvals, cancellation and snapshots span the tree.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startChildStack, finalAnswer, type ChildStack } from '../support/child-stack.ts';
import { stopAllWorkerProcesses } from '../support/worker-process.ts';

let s: ChildStack;

beforeAll(async () => {
  s = await startChildStack(inject('redisUrl'));
  await s.spawn();
  await s.spawn();
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s.stop();
});

describe('child runs', () => {
  it.each(['sequential', 'batch', 'stream'])(
    '%s: the child answers and its answer is the tool result',
    async (mode) => {
      const { runId } = await s.client.createRun(`tree-${mode}`, 'call answer');
      const cp = await s.waitDone(runId);
      expect(cp.termination).toEqual({ kind: 'natural_end' });
      expect(finalAnswer(cp)).toBe('results: answer="answered \\"task 0\\""');
      const children = await s.childrenOf(runId);
      expect(children).toHaveLength(1);
      const child = children[0]!;
      expect(child.identity.parent).toMatchObject({ runId, toolName: 'answer', depth: 1 });
      expect(child.identity.threadId).toBe(cp.identity.threadId);
      expect(child.status).toBe('done');
      const view = await s.client.get(`/v1/runs/${runId}`);
      expect(view.body.childRuns).toEqual([
        expect.objectContaining({ childRunId: child.identity.runId, status: 'done' }),
      ]);
    },
  );
});
