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

describe('admission', () => {
  const queued = {
    reason: 'fairness_key_limit' as const,
    position: 1,
    backlog: 2,
    inProgress: 1,
    limit: 1,
  };

  it('runs list shows priority, fairness key and a queued place', () => {
    const text = renderRunList(
      [
        { ...run('r2', 'created'), priority: 3, fairnessKey: 'alice', queued },
        { ...run('r1', 'running'), priority: 2, fairnessKey: 'alice' },
        run('old'),
      ],
      plain,
    );
    const [r2, r1, old] = text.trimEnd().split('\n');
    expect(r2).toMatch(/ P3 alice {2}queued 1\/2$/);
    expect(r1).toMatch(/ P2 alice$/);
    expect(old).not.toContain(' P');
  });

  it('runs get prints priority, key and why a queued run waits, without --json', () => {
    const snap = {
      runId: 'r2',
      status: 'created',
      agent: 'a',
      threadId: 'th',
      step: 0,
      phase: null,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      toolCalls: [],
      priority: 3,
      fairnessKey: 'alice',
      queued,
    } as unknown as RunView;
    const text = renderSnapshot(snap, plain);
    expect(text).toContain('priority 3, fairness key alice');
    expect(text).toContain(
      'queued: position 1 of 2 waiting for a slot (fairness key limit; 1 of 1 of its key in progress)',
    );
    expect(renderSnapshot({ ...snap, queued: undefined }, plain)).not.toContain('queued');
  });
});
