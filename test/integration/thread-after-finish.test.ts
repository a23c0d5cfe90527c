import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { startHarness, type Harness } from '@baton/testing/worker-harness';

/**
 * A worker writes a run's final commit (run.finished goes out) and releases the run's thread
 * right after it. A client that saw run.finished and reads the thread at once must find the
 * run's messages there, whatever the moment of the read. The window is made permanent here: the
 * final commit is written without the release (as if the worker stopped in between).
 */
describe('reading a thread right after its run finished', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), createDemoAgents(systemClock));
    // The worker advertised its agents; with it stopped, this test writes the run itself.
    await h.workers[0]!.stop(500);
  });
  afterAll(async () => {
    await h.stop();
  });

  it("GET a thread between the run's final commit and its release: the run's messages are in", async () => {
    const svc = h.client.service;
    const created = await svc.createRun('t1', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'hello there' }] },
    });
    const stored = await h.client.store.load(created.runId);
    expect(stored).not.toBeNull();
    const cp = stored!.checkpoint;
    const now = Date.now();
    const reply = {
      id: 'm-final',
      role: 'assistant' as const,
      content: 'done here',
      toolCalls: [],
    };
    // The final commit alone (the store's commit does not release the thread; the worker's
    // committer does that next).
    await h.client.store.commit(
      created.runId,
      stored!.version,
      {
        ...cp,
        status: 'done',
        phase: 'run_end',
        messages: [...cp.messages, reply],
        termination: { kind: 'natural_end' },
        startedAt: now,
        finishedAt: now,
        updatedAt: now,
      },
      [
        {
          type: 'run.finished',
          status: 'done',
          termination: { kind: 'natural_end' },
          usage: cp.usage,
        },
      ],
      null,
    );
    const thread = await svc.thread('t1', created.threadId);
    expect(thread.messages.map((m) => m.id)).toContain('m-final');
    expect(thread.messages.length).toBe(cp.messages.length + 1);
    expect(thread.activeRunId).toBeNull();
  });
});
