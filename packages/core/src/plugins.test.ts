import type { Checkpoint } from '@baton/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ALL_PHASES_COVERED,
  combineGateDecisions,
  runHooks,
  type GateDecision,
  type HookContext,
  type Plugin,
} from './plugins.ts';

const allow: GateDecision = { kind: 'allow' };
const block: GateDecision = { kind: 'block', reason: 'policy' };
const suspend: GateDecision = {
  kind: 'suspend',
  ticket: { reason: 'approval', message: 'ok?', resumeMode: 'replay_tool_call' },
};
const setResult: GateDecision = { kind: 'set_result', result: { kind: 'success', output: 42 } };

const RANK: Record<GateDecision['kind'], number> = {
  allow: 0,
  set_result: 1,
  suspend: 2,
  block: 3,
};

describe('combineGateDecisions', () => {
  it('is Allow for no decisions or only undefined', () => {
    expect(combineGateDecisions([])).toEqual({ kind: 'allow' });
    expect(combineGateDecisions([undefined, undefined])).toEqual({ kind: 'allow' });
  });

  it.each<[GateDecision[], GateDecision]>([
    [[allow, setResult], setResult],
    [[setResult, allow], setResult],
    [[setResult, suspend], suspend],
    [[suspend, setResult], suspend],
    [[suspend, block], block],
    [[block, suspend], block],
    [[allow, setResult, suspend, block], block],
    [[block, suspend, setResult, allow], block],
    [[allow, suspend, allow], suspend],
  ])('%o -> %o', (decisions, expected) => {
    expect(combineGateDecisions(decisions)).toBe(expected);
  });

  it('ties keep the first plugin answer', () => {
    const first: GateDecision = { kind: 'block', reason: 'first' };
    const second: GateDecision = { kind: 'block', reason: 'second', terminateRun: true };
    expect(combineGateDecisions([first, second])).toBe(first);
    const r1: GateDecision = { kind: 'set_result', result: { kind: 'success', output: 1 } };
    const r2: GateDecision = { kind: 'set_result', result: { kind: 'success', output: 2 } };
    expect(combineGateDecisions([undefined, r1, r2])).toBe(r1);
  });

  it('picks the highest priority regardless of order (property)', () => {
    const decision = fc.constantFrom<GateDecision | undefined>(
      allow,
      block,
      suspend,
      setResult,
      undefined,
    );
    fc.assert(
      fc.property(fc.array(decision, { maxLength: 10 }), (decisions) => {
        const present = decisions.filter((d): d is GateDecision => d !== undefined);
        const best = Math.max(0, ...present.map((d) => RANK[d.kind]));
        const combined = combineGateDecisions(decisions);
        expect(RANK[combined.kind]).toBe(best);
        expect(combineGateDecisions([...decisions].reverse()).kind).toBe(combined.kind);
      }),
    );
  });
});

describe('runHooks', () => {
  const ctx: HookContext = { checkpoint: {} as Checkpoint, state: { run: {}, thread: {} }, now: 7 };

  it('collects commands from every plugin in plugin order', () => {
    const seen: string[] = [];
    const plugins: Plugin[] = [
      {
        name: 'a',
        hooks: {
          step_end: (c) => {
            seen.push(`a@${c.now}`);
            return [
              { kind: 'patch_state', patches: [{ op: 'set', key: 'k', value: 'a' }] },
              { kind: 'terminate', reason: { kind: 'natural_end' } },
            ];
          },
        },
      },
      {
        name: 'no-hook',
        hooks: { run_start: () => [{ kind: 'terminate', reason: { kind: 'cancelled' } }] },
      },
      { name: 'undefined', hooks: { step_end: () => undefined } },
      {
        name: 'b',
        hooks: {
          step_end: () => {
            seen.push('b');
            return [{ kind: 'patch_state', patches: [{ op: 'delete', key: 'k' }] }];
          },
        },
      },
    ];
    expect(runHooks(plugins, 'step_end', ctx)).toEqual([
      { kind: 'patch_state', patches: [{ op: 'set', key: 'k', value: 'a' }] },
      { kind: 'terminate', reason: { kind: 'natural_end' } },
      { kind: 'patch_state', patches: [{ op: 'delete', key: 'k' }] },
    ]);
    expect(seen).toEqual(['a@7', 'b']);
  });

  it('returns nothing when no plugin has the hook', () => {
    expect(runHooks([], 'run_end', ctx)).toEqual([]);
    expect(runHooks([{ name: 'x', hooks: {} }], 'run_end', ctx)).toEqual([]);
  });

  it('passes the same context to every hook', () => {
    const received: unknown[] = [];
    const plugin = (name: string): Plugin => ({
      name,
      hooks: {
        run_start: (c) => {
          received.push(c);
          return [];
        },
      },
    });
    runHooks([plugin('1'), plugin('2')], 'run_start', ctx);
    expect(received).toEqual([ctx, ctx]);
    expect(received[0]).toBe(ctx);
  });

  it('the phase coverage check holds', () => {
    expect(ALL_PHASES_COVERED).toBe(true);
  });
});
