import { MAX_CHILD_DEPTH, childRunIdFor, type Checkpoint, type RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentDefinition } from '../agent.ts';
import { foldSnapshot } from '../snapshot.ts';
import { agentWith, echoTool } from '../testing/fixtures.ts';
import { agentTool, agentToolPrompt, describeTool } from '../tools.ts';
import { childParentOf, childRunOutcome, childRunResult, runningChildCalls } from './child-runs.ts';
import { Engine } from './engine.ts';
import { activityOf } from './activity.ts';

const researcher = agentTool('researcher', { description: 'finds things out' });
const drafted = agentTool('writer', {
  name: 'draft',
  description: 'writes',
  thread: 'new',
  inputSchema: z.object({ topic: z.string(), words: z.number() }),
  approval: { message: 'draft it?' },
});

function agent(mode: AgentDefinition['executionMode'] = 'sequential'): AgentDefinition {
  return agentWith([{ text: 'unused' }], [researcher, drafted, echoTool()], {
    executionMode: mode,
  });
}

/** A run of `a` whose round has these calls, prepared (ToolGate ran). */
function prepared(
  a: AgentDefinition,
  calls: { id: string; name: string; arguments: Record<string, unknown> }[],
  parent?: Checkpoint['identity']['parent'],
) {
  const engine = new Engine(a);
  const identity = {
    runId: 'root',
    threadId: 'th',
    turnId: 'turn-0',
    tenantId: 't',
    agent: a.name,
    ...(parent ? { parent } : {}),
  };
  let cp = engine.create({ identity, input: [{ role: 'user', content: 'go' }] }, 1).checkpoint;
  cp = engine.start(cp, 2).checkpoint;
  cp = engine.beginStep(cp, 3).checkpoint;
  cp = engine.commitInference(
    cp,
    {
      text: '',
      toolCalls: calls.map((c) => ({ ...c, arguments: c.arguments as never })),
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      finishReason: 'tool-calls',
    },
    4,
  ).checkpoint;
  return { engine, ...engine.prepareTools(cp, 5) };
}

describe('agent tools (agentTool)', () => {
  it('look like ordinary tools to the model, with a message argument by default', () => {
    expect(describeTool(researcher)).toMatchObject({
      name: 'researcher',
      description: 'finds things out',
      childAgent: 'researcher',
      inputSchema: { properties: { message: { type: 'string' } } },
    });
    expect(describeTool(drafted).name).toBe('draft');
  });

  it("turn the call's arguments into the child's user message", () => {
    expect(agentToolPrompt({ agent: 'x' }, { message: 'hi' })).toBe('hi');
    expect(agentToolPrompt({ agent: 'x' }, { topic: 'a', words: 3 })).toBe(
      '{"topic":"a","words":3}',
    );
    expect(
      agentToolPrompt(
        { agent: 'x', prompt: (a) => `about ${JSON.stringify(a['topic'])}` },
        { topic: 'b' },
      ),
    ).toBe('about "b"');
  });
});

describe('ToolGate for an agent tool', () => {
  it('runs the call as a child run: link recorded with the Running status, in one transition', () => {
    const t = prepared(agent(), [{ id: 'c1', name: 'researcher', arguments: { message: 'why?' } }]);
    const call = t.checkpoint.calls['c1']!;
    expect(call.status).toBe('running');
    expect(call.child).toEqual({
      runId: 'root.s1c0',
      agent: 'researcher',
      threadId: 'th',
      thread: 'inherit',
      input: 'why?',
    });
    expect(t.events).toContainEqual({
      type: 'child_run.linked',
      link: {
        toolName: 'researcher',
        toolCallId: 'c1',
        childRunId: 'root.s1c0',
        childAgentId: 'researcher',
        threadId: 'th',
        attempt: 0,
      },
    });
    expect(t.invocations).toEqual([
      expect.objectContaining({ toolCallId: 'c1', child: call.child }),
    ]);
    expect(runningChildCalls(t.checkpoint).map((c) => c.id)).toEqual(['c1']);
    // The parent has work (its child is its tool executing): Running, not Waiting.
    expect(t.checkpoint.status).toBe('running');
    expect(activityOf(t.checkpoint)).toBe('active');
  });

  it('re-entering the round re-invokes the same child, with no new event (created once)', () => {
    const t = prepared(agent(), [{ id: 'c1', name: 'researcher', arguments: { message: 'x' } }]);
    const again = t.engine.prepareTools(t.checkpoint, 6);
    expect(again.events).toEqual([]);
    expect(again.invocations.map((i) => i.child?.runId)).toEqual(['root.s1c0']);
  });

  it('parallel rounds link one child per call, ids from the call positions', () => {
    const t = prepared(agent('parallel_streaming'), [
      { id: 'a', name: 'researcher', arguments: { message: '1' } },
      { id: 'b', name: 'echo', arguments: {} },
      { id: 'c', name: 'researcher', arguments: { message: '2' } },
    ]);
    expect(t.invocations.map((i) => i.child?.runId ?? i.toolName)).toEqual([
      'root.s1c0',
      'echo',
      'root.s1c2',
    ]);
  });

  it('an approval-gated agent tool starts its child only after the decision, as attempt 1', () => {
    const t = prepared(agent(), [{ id: 'd', name: 'draft', arguments: { topic: 'x', words: 10 } }]);
    expect(t.checkpoint.calls['d']?.status).toBe('suspended');
    expect(t.checkpoint.calls['d']?.child).toBeUndefined();
    let cp = t.engine.receiveDecisions(
      t.checkpoint,
      [{ decisionId: 'ok', toolCallId: 'd', action: 'resume' }],
      7,
    ).checkpoint;
    cp = t.engine.applyDecisions(cp, 8).checkpoint;
    const resumed = t.engine.prepareTools(cp, 9);
    expect(resumed.checkpoint.calls['d']?.child).toMatchObject({
      runId: 'root.s1c0a1',
      thread: 'new',
      threadId: 'root.s1c0a1',
      input: '{"topic":"x","words":10}',
    });
  });

  it(`refuses to nest deeper than ${String(MAX_CHILD_DEPTH)} levels: the call fails, no child`, () => {
    const parent = {
      runId: 'up',
      toolCallId: 'x',
      toolName: 'self',
      agent: 'a',
      attempt: 0,
      rootRunId: 'top',
      depth: MAX_CHILD_DEPTH,
    };
    const t = prepared(
      agent(),
      [{ id: 'c1', name: 'researcher', arguments: { message: 'x' } }],
      parent,
    );
    const call = t.checkpoint.calls['c1']!;
    expect(call.status).toBe('failed');
    expect(call.child).toBeUndefined();
    expect(call.outcome?.error).toMatch(/nested 5 levels deep; at most 4/);
    expect(t.events.some((e) => e.type === 'child_run.linked')).toBe(false);
  });
});

/* eslint-disable @typescript-eslint/no-unsafe-assignment -- vitest's asymmetric matchers are typed any */
describe("a child run's end as its parent's tool result", () => {
  const base = prepared(agent(), [{ id: 'c1', name: 'researcher', arguments: { message: 'x' } }]);
  const parentCall = base.checkpoint.calls['c1']!;
  const origin = childParentOf(base.checkpoint, parentCall);

  function child(termination: NonNullable<Checkpoint['termination']> | null): Checkpoint {
    return {
      ...base.checkpoint,
      identity: {
        ...base.checkpoint.identity,
        runId: 'root.s1c0',
        agent: 'researcher',
        parent: origin,
      },
      status: termination ? 'done' : 'running',
      termination,
      historyLength: 0,
      messages: [
        { id: 'u', role: 'user', content: 'x' },
        { id: 'a1', role: 'assistant', content: 'first', toolCalls: [] },
        { id: 'a2', role: 'assistant', content: 'the answer', toolCalls: [] },
        { id: 'a3', role: 'assistant', content: '', toolCalls: [] },
      ],
      startedAt: 10,
      finishedAt: 20,
    };
  }

  it('the origin names the parent call and the tree', () => {
    expect(origin).toEqual({
      runId: 'root',
      toolCallId: 'c1',
      toolName: 'researcher',
      agent: 'test-agent',
      attempt: 0,
      rootRunId: 'root',
      depth: 1,
    });
  });

  it.each([
    [{ kind: 'natural_end' }, { kind: 'success', output: 'the answer' }],
    [{ kind: 'behavior_requested' }, { kind: 'success', output: 'the answer' }],
    [
      { kind: 'stopped', code: 'max_rounds' },
      expect.objectContaining({
        kind: 'warning',
        output: 'the answer',
        message: expect.stringMatching(/stopped early: max_rounds/),
      }),
    ],
    [
      { kind: 'cancelled' },
      expect.objectContaining({ kind: 'error', code: 'child_run_cancelled' }),
    ],
    [
      { kind: 'blocked', reason: 'no' },
      expect.objectContaining({ kind: 'error', code: 'child_run_blocked' }),
    ],
    [
      { kind: 'error', message: 'boom' },
      expect.objectContaining({
        kind: 'error',
        code: 'child_run_failed',
        message: expect.stringMatching(/failed: boom$/),
      }),
    ],
  ] as const)('%o becomes %o', (termination, result) => {
    expect(childRunOutcome(child(termination as never))).toEqual(result);
  });

  it('is delivered for the parent call and attempt, the same every time', () => {
    const done = child({ kind: 'natural_end' });
    expect(childRunResult(done)).toEqual({
      toolCallId: 'c1',
      attempt: 0,
      result: { kind: 'success', output: 'the answer' },
      patches: [],
      startedAt: 10,
      finishedAt: 20,
      child: {
        runId: 'root.s1c0',
        agent: 'researcher',
        status: 'done',
        termination: { kind: 'natural_end' },
        toolCallId: 'c1',
      },
    });
    expect(childRunResult(done)).toEqual(childRunResult(structuredClone(done)));
    // Not ended, suspended, or not a child: nothing to deliver.
    expect(childRunResult(child(null))).toBeNull();
    expect(childRunOutcome({ ...child({ kind: 'suspended' }), status: 'waiting' })).toBeNull();
    expect(childRunResult({ ...done, identity: base.checkpoint.identity })).toBeNull();
  });

  it('applied to the parent, it settles the call like any tool result', () => {
    const result = childRunResult(child({ kind: 'natural_end' }))!;
    const applied = base.engine.applyToolResults(base.checkpoint, [result], 30);
    expect(applied.checkpoint.calls['c1']?.status).toBe('succeeded');
    expect(applied.checkpoint.calls['c1']?.outcome?.output).toBe('the answer');
    // The parent's log says which child ended and how, right after the call's result.
    const types = applied.events.map((e) => e.type);
    expect(types.indexOf('child_run.finished')).toBe(types.indexOf('tool_call.result') + 1);
    expect(applied.events).toContainEqual({ type: 'child_run.finished', child: result.child });
    // A result for another child (a stale attempt's) reports nothing.
    const stale = { ...result, child: { ...result.child!, runId: 'root.s1c0a9' } };
    const ignored = base.engine.applyToolResults(base.checkpoint, [stale], 30);
    expect(ignored.events.some((e) => e.type === 'child_run.finished')).toBe(false);
  });
});

describe('snapshots', () => {
  it('fold child_run.linked into childRuns, once per child', () => {
    const t = prepared(agent('parallel_batch_approval'), [
      { id: 'a', name: 'researcher', arguments: { message: '1' } },
      { id: 'b', name: 'researcher', arguments: { message: '2' } },
    ]);
    const events = t.events.map((e, i): RunEvent => ({
      ...e,
      seq: i + 1,
      runId: 'root',
      threadId: 'th',
      turnId: 't',
      at: i,
    }));
    const snapshot = foldSnapshot([...events, ...events]);
    expect(snapshot.childRuns?.map((c) => c.childRunId)).toEqual(['root.s1c0', 'root.s1c1']);
    expect(
      foldSnapshot(events.filter((e) => e.type !== 'child_run.linked')).childRuns,
    ).toBeUndefined();
  });

  it('child run ids extend the parent id with the call position and attempt', () => {
    expect(childRunIdFor('r', { step: 2, index: 1, attempt: 0 })).toBe('r.s2c1');
    expect(childRunIdFor('r.s2c1', { step: 1, index: 0, attempt: 3 })).toBe('r.s2c1.s1c0a3');
  });
});
