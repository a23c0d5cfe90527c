import type { RunSummary } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { parentRunIdOf, plain, renderRunList } from './render.ts';

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
