import type { RunEvent, RunSummary, RunView } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { EventRenderer, parentRunIdOf, plain, renderRunList, renderSnapshot } from './render.ts';

const run = (runId: string, status: RunSummary['status'] = 'done'): RunSummary => ({
  runId,
  tenantId: 't',
  agent: 'a',
  threadId: 'th',
  status,
  createdAt: 0,
  updatedAt: 0,
});

describe('runs list', () => {
  it("reads a child run's parent from its id", () => {
    expect(parentRunIdOf('run_1')).toBeNull();
    expect(parentRunIdOf('run_1.s1c0')).toBe('run_1');
    expect(parentRunIdOf('run_1.s1c0.s2c1a3')).toBe('run_1.s1c0');
    expect(parentRunIdOf('my.run.id')).toBeNull();
  });

  it('nests child runs under their parent, in call order, and names the parent of one without it', () => {
    const text = renderRunList(
      [
        run('r1.s2c0'),
        run('r1.s1c0.s1c0', 'waiting'),
        run('r1.s1c0', 'running'),
        run('r2'),
        run('r1', 'running'),
        run('gone.s1c0'),
      ],
      plain,
    );
    const ids = text
      .trimEnd()
      .split('\n')
      .map((l) => /^[└ ]*(\S+)/.exec(l)![0]);
    expect(ids).toEqual(['r2', 'r1', '└ r1.s1c0', '  └ r1.s1c0.s1c0', '└ r1.s2c0', 'gone.s1c0']);
    expect(text).toMatch(/^gone\.s1c0 .* child of gone$/m);
  });
});

describe('runs list and admission', () => {
  it('shows a run queued behind its fairness window as queued, with its place', () => {
    const queued = {
      ...run('r9', 'created'),
      queued: { reason: 'fairness_key_limit', position: 2, backlog: 3, inProgress: 1, limit: 1 },
    } as RunSummary;
    const text = renderRunList([queued, run('r8', 'running')], plain);
    expect(text).toMatch(/^r9 {2}queued .* queued \(position 2 of 3, fairness_key_limit\)$/m);
    expect(text).toMatch(/^r8 {2}running /m);
  });
});

describe('run lines', () => {
  it('names an agent tool once when the tool is named after its agent, both when not', () => {
    const linked = (toolName: string, childAgentId: string): string =>
      new EventRenderer(plain).render({
        type: 'child_run.linked',
        runId: 'r1',
        seq: 5,
        at: 0,
        link: { toolCallId: 'c1', toolName, childRunId: 'r1.s1c0', childAgentId },
      } as unknown as RunEvent);
    expect(linked('counter', 'counter')).toBe('  counter runs as child run r1.s1c0\n');
    expect(linked('middle', 'grand-middle')).toBe(
      '  middle runs as child run r1.s1c0 (agent grand-middle)\n',
    );
  });

  it('runs get says what a waiting run waits for, not that it ended', () => {
    const view = (status: RunView['status'], termination: RunView['termination']): RunView =>
      ({
        runId: 'r1',
        status,
        agent: 'counter',
        threadId: 'th',
        step: 2,
        phase: null,
        usage: { totalTokens: 0 },
        termination,
        toolCalls: [],
        childRuns: [{ childRunId: 'r1.s1c0', childAgentId: 'counter', toolName: 'counter' }],
        await:
          status === 'waiting'
            ? {
                kind: 'tool_calls',
                calls: [{ toolCallId: 'c1', toolName: 'deploy', message: 'ok?' }],
              }
            : null,
      }) as unknown as RunView;
    const waiting = renderSnapshot(view('waiting', { kind: 'suspended' }), plain);
    expect(waiting).toContain('0 tokens, waiting for a decision\n');
    expect(waiting).not.toContain('ended');
    expect(waiting).toContain('  child r1.s1c0 not started agent counter\n');
    expect(renderSnapshot(view('done', { kind: 'natural_end' }), plain)).toContain(
      '0 tokens, ended: natural_end\n',
    );
  });
});
