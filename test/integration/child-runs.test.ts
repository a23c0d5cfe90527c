/**
 * Child runs (agent-as-tool) with real worker processes, a real API and a real Redis: an agent
 * tool's call starts a child run whose answer, error or cancellation becomes the call's result;
 * the parent holds no job meanwhile; approvals, cancellation and snapshots span the tree.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {
  DecisionsResponse,
  ErrorBody,
  RunEvent,
  RunSnapshot,
  ThreadResponse,
} from '@baton/protocol';
import { startChildStack, finalAnswer, type ChildStack } from '@baton/testing/child-stack';
import { eventsOf } from '@baton/testing/api-harness';
import { waitFor } from '@baton/testing/worker-harness';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

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
      const view = await s.client.get<RunSnapshot>(`/v1/runs/${runId}`);
      expect(view.body.childRuns).toEqual([
        expect.objectContaining({ childRunId: child.identity.runId, status: 'done' }),
      ]);
    },
  );

  it.each(['sequential', 'batch', 'stream'])(
    '%s: two children and a plain tool in one round; each call gets its own child once',
    async (mode) => {
      const { runId } = await s.client.createRun(`tree-${mode}`, 'call answer,echo,answer');
      const cp = await s.waitDone(runId);
      expect(finalAnswer(cp)).toBe(
        'results: answer="answered \\"task 0\\"" | echo={"echoed":"v1"} | answer="answered \\"task 2\\""',
      );
      const children = await s.childrenOf(runId);
      expect(children.map((c) => c.identity.parent?.toolCallId).sort()).toEqual([
        'call_1_1',
        'call_1_3',
      ]);
      const linked = (await s.events(runId)).filter((e) => e.type === 'child_run.linked');
      expect(linked).toHaveLength(2);
    },
  );

  it('a child that fails gives the parent a tool error, and the parent goes on', async () => {
    const { runId } = await s.client.createRun('tree-sequential', 'call fail');
    const cp = await s.waitDone(runId);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(finalAnswer(cp)).toMatch(
      /^results: fail=error:\{"error":"child run .* failed: model failed/,
    );
    const [child] = await s.childrenOf(runId);
    expect(child?.termination?.kind).toBe('error');
  });

  it('an agent nobody advertises and a tree too deep are tool errors, not hangs', async () => {
    const ghost = await s.client.createRun('tree-stream', 'call ghost');
    expect(finalAnswer(await s.waitDone(ghost.runId))).toMatch(/ghost=error:.*unknown agent/);
    const deep = await s.client.createRun('tree-sequential', 'call self');
    const cp = await s.waitDone(deep.runId, 60_000);
    expect(finalAnswer(cp)).toMatch(/self=error:/);
    // root -> 4 nested levels; the fifth is refused by the depth limit.
    let level = cp;
    for (let depth = 1; depth <= 4; depth += 1) {
      const [next] = await s.childrenOf(level.identity.runId);
      expect(next?.identity.parent?.depth).toBe(depth);
      level = next!;
    }
    expect(await s.childrenOf(level.identity.runId)).toEqual([]);
    expect(JSON.stringify(level.messages)).toContain('nested 5 levels deep; at most 4 are allowed');
  });

  it('a grandchild: the tree nests, each level answers its parent', async () => {
    const { runId } = await s.client.createRun('tree-batch', 'call middle');
    const cp = await s.waitDone(runId);
    expect(finalAnswer(cp)).toBe(
      'results: middle="middle got answer=\\"answered \\\\\\"deep\\\\\\"\\""',
    );
    const [middle] = await s.childrenOf(runId);
    const [leaf] = await s.childrenOf(middle!.identity.runId);
    expect(leaf?.identity.parent).toMatchObject({ rootRunId: runId, depth: 2 });
  });

  it('another tenant sees none of the tree: 404 on the child, its events, its decisions', async () => {
    const { runId } = await s.client.createRun('tree-stream', 'call approval');
    const view = await waitForAwait(runId);
    const childId = view.await!.calls[0]!.runId!;
    for (const path of [`/v1/runs/${childId}`, `/v1/runs/${runId}`]) {
      const r = await s.stranger.get<ErrorBody>(path);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('run_not_found');
    }
    expect((await s.stranger.stream(`/v1/runs/${runId}/events?children=1`)).status).toBe(404);
    const refused = await s.stranger.post(`/v1/runs/${childId}/decisions`, {
      decisions: [{ toolCallId: view.await!.calls[0]!.toolCallId, action: 'resume' }],
    });
    expect(refused.status).toBe(404);
    expect((await s.client.post(`/v1/runs/${runId}/cancel`)).status).toBe(202);
    await s.waitDone(runId);
  });

  it('measures: 20 parents at once, two agent calls each vs two plain tool calls each', async () => {
    const batch = async (content: string): Promise<string> => {
      const started = Date.now();
      const runs = await Promise.all(
        Array.from({ length: 20 }, () => s.client.createRun('tree-stream', content)),
      );
      const latencies = await Promise.all(
        runs.map(async ({ runId }) => {
          const cp = await s.waitDone(runId, 60_000);
          expect(cp.termination).toEqual({ kind: 'natural_end' });
          return (cp.finishedAt ?? 0) - cp.createdAt;
        }),
      );
      latencies.sort((a, b) => a - b);
      return `wall ${String(Date.now() - started)} ms, per run p50 ${String(latencies[10])} ms, max ${String(latencies[19])} ms`;
    };
    await batch('call echo,answer'); // warm-up: both paths, so neither pays for first use
    const plain = await batch('call echo,echo');
    const trees = await batch('call answer,answer');
    console.info(`[child-runs] 20 parents, 2 plain tools each: ${plain}`);
    console.info(`[child-runs] 20 parents, 2 child runs each (60 runs): ${trees}`);
  });

  it('thread "new": the child gets a thread of its own and writes its history there', async () => {
    const { runId, threadId } = await s.client.createRun('tree-sequential', 'call answer_new');
    await s.waitDone(runId);
    const [child] = await s.childrenOf(runId);
    expect(child?.identity.threadId).not.toBe(threadId);
    const thread = await s.client.get<ThreadResponse>(`/v1/threads/${child!.identity.threadId}`);
    expect(thread.status).toBe(200);
    expect(thread.body.runIds).toEqual([child!.identity.runId]);
    expect(thread.body.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    // The parent's thread has the parent's run only.
    const parentThread = await s.client.get<ThreadResponse>(`/v1/threads/${threadId}`);
    expect(parentThread.body.runIds).toEqual([runId]);
  });
});

describe('child runs: approvals and cancellation', () => {
  it.each(['sequential', 'batch', 'stream'])(
    "%s: a child's approval shows in the parent's await and is answered through the parent",
    async (mode) => {
      const { runId } = await s.client.createRun(`tree-${mode}`, 'call approval');
      const view = await waitForAwait(runId);
      const awaited = view.await!.calls[0]!;
      expect(view.status).toBe('running');
      expect(awaited.toolName).toBe('approve_me');
      const [child] = await s.childrenOf(runId);
      expect(awaited.runId).toBe(child!.identity.runId);
      // The parent holds nothing while its child waits: no lease, no live step job.
      // (Polled: the pass that started the child may still be on its way out.)
      const meta = await waitFor(
        async () => {
          const m = await s.rt.store.meta(runId);
          const leased = await s.rt.redis.exists(s.rt.keys.run(runId).lease);
          const job = m && (await s.rt.queues.liveStepJob(runId, m.agent, m.version));
          return m && leased === 0 && job === null ? m : null;
        },
        10_000,
        'the parent to hold no lease and no job',
      );
      expect(meta.status).toBe('running');
      const decided = await s.client.post<DecisionsResponse>(`/v1/runs/${runId}/decisions`, {
        decisions: [{ toolCallId: awaited.toolCallId, action: 'resume' }],
      });
      expect(decided.status).toBe(202);
      expect(decided.body.routed).toEqual([
        expect.objectContaining({ runId: child!.identity.runId, accepted: [expect.any(String)] }),
      ]);
      const cp = await s.waitDone(runId);
      expect(finalAnswer(cp)).toBe('results: approval="child approved and done"');
    },
  );

  it('a decision sent to the child directly works too; runId names a descendant explicitly', async () => {
    const { runId } = await s.client.createRun('tree-stream', 'call approval,approval');
    const view = await waitForAwait(runId, 2);
    const a = view.await!.calls[0]!;
    const b = view.await!.calls[1]!;
    const direct = await s.client.post(`/v1/runs/${a.runId}/decisions`, {
      decisions: [{ toolCallId: a.toolCallId, action: 'resume' }],
    });
    expect(direct.status).toBe(202);
    const named = await s.client.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ toolCallId: b.toolCallId, runId: b.runId, action: 'cancel' }],
    });
    expect(named.status).toBe(202);
    const cp = await s.waitDone(runId);
    expect(finalAnswer(cp)).toMatch(/^results: approval="child approved and done" \| approval=/);
    // A run that is not a descendant cannot be named.
    const other = await s.client.createRun('tree-sequential', 'nothing');
    const refused = await s.client.post<ErrorBody>(`/v1/runs/${other.runId}/decisions`, {
      decisions: [{ toolCallId: a.toolCallId, runId: a.runId, action: 'resume' }],
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('call_unknown');
  });

  it('a child cancelled on its own is a tool error for the parent', async () => {
    const { runId } = await s.client.createRun('tree-sequential', 'call approval');
    const view = await waitForAwait(runId);
    const childId = view.await!.calls[0]!.runId!;
    expect((await s.client.post(`/v1/runs/${childId}/cancel`)).status).toBe(202);
    const cp = await s.waitDone(runId);
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(finalAnswer(cp)).toMatch(/approval=error:.*was cancelled/);
  });

  it.each(['sequential', 'batch', 'stream'])(
    '%s: cancelling the parent cancels its whole tree',
    async (mode) => {
      const { runId } = await s.client.createRun(`tree-${mode}`, 'call approval,middle');
      await waitForAwait(runId);
      expect((await s.client.post(`/v1/runs/${runId}/cancel`)).status).toBe(202);
      const cp = await s.waitDone(runId);
      expect(cp.termination).toEqual({ kind: 'cancelled' });
      for (const child of await s.childrenOf(runId)) {
        const done = await s.waitDone(child.identity.runId);
        if (child.identity.agent === 'child-approval')
          expect(done.termination).toEqual({ kind: 'cancelled' });
      }
    },
  );
});

describe('child runs: the tree over SSE (?children=1)', () => {
  /** The durable logs of the run and its descendants, in per-run seq order. */
  async function treeLogs(runId: string): Promise<Map<string, number[]>> {
    const logs = new Map<string, number[]>();
    const visit = async (id: string): Promise<void> => {
      logs.set(
        id,
        (await s.events(id)).map((e) => e.seq),
      );
      for (const child of await s.childrenOf(id)) await visit(child.identity.runId);
    };
    await visit(runId);
    return logs;
  }

  function perRun(events: readonly RunEvent[]): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const e of events) out.set(e.runId, [...(out.get(e.runId) ?? []), e.seq]);
    return out;
  }

  it('streams the root and every descendant, each event tagged with its run, and ends', async () => {
    const { runId } = await s.client.createRun('tree-stream', 'call middle,answer');
    const result = await s.client.stream(`/v1/runs/${runId}/events?children=1`, {
      timeoutMs: 30_000,
    });
    expect(result.status).toBe(200);
    expect(result.endedByServer).toBe(true);
    const events = eventsOf(result);
    const logs = await treeLogs(runId);
    expect(logs.size).toBe(4); // root, middle, its child, answer
    expect(perRun(events)).toEqual(logs);
    // The last id is a composite cursor naming every descendant.
    expect(result.lastEventId.split(';')).toHaveLength(4);
  });

  it('reconnecting with Last-Event-ID resumes every log: no loss, no duplicate', async () => {
    const { runId } = await s.client.createRun('tree-batch', 'call middle,answer');
    await s.waitDone(runId);
    const logs = await treeLogs(runId);
    const total = [...logs.values()].reduce((n, seqs) => n + seqs.length, 0);
    const seen: RunEvent[] = [];
    let lastId = '';
    // Cut the connection every 7 events.
    for (let round = 0; round < 100 && seen.length < total; round += 1) {
      const part = await s.client.stream(`/v1/runs/${runId}/events?children=1`, {
        headers: lastId ? { 'last-event-id': lastId } : {},
        stopWhen: (_m, all) => all.length >= 7,
      });
      expect(part.status).toBe(200);
      seen.push(...eventsOf(part));
      // The id of the last event taken (the parser may have read further into the chunk).
      lastId = part.messages.at(-1)?.lastEventId ?? lastId;
    }
    expect(perRun(seen)).toEqual(logs);
    expect(seen).toHaveLength(total);
    // Caught up on a finished tree: the stream ends at once, with nothing.
    const tail = await s.client.stream(`/v1/runs/${runId}/events?children=1`, {
      headers: { 'last-event-id': lastId },
    });
    expect(tail.endedByServer).toBe(true);
    expect(tail.messages).toEqual([]);
    const bad = await s.client.stream(`/v1/runs/${runId}/events?children=1`, {
      headers: { 'last-event-id': 'nope' },
    });
    expect(bad.status).toBe(400);
    const mixed = await s.client.stream(`/v1/runs/${runId}/events?children=1&until=suspended`);
    expect(mixed.status).toBe(400);
  });
});

async function waitForAwait(runId: string, calls = 1): Promise<RunSnapshot> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const view = await s.client.get<RunSnapshot>(`/v1/runs/${runId}`);
    if ((view.body.await?.calls.length ?? 0) >= calls) return view.body;
    if (Date.now() > deadline)
      throw new Error(`run ${runId} never awaited: ${JSON.stringify(view.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
