import type { ToolCallStatus } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { IllegalTransitionError } from './errors.ts';
import {
  TERMINAL_TOOL_CALL_STATUSES,
  TOOL_CALL_TRANSITIONS,
  assertToolCallTransition,
  canTransitionToolCall,
  isTerminalCallStatus,
} from './tool-call-status.ts';

const STATUSES: readonly ToolCallStatus[] = [
  'new',
  'running',
  'suspended',
  'resuming',
  'succeeded',
  'failed',
  'cancelled',
];

/**
 * Expected table written independently. Rows are "from", the string lists the legal "to" states.
 * Seed layer 2: New->Running; Running->Succeeded/Failed/Cancelled/Suspended; Suspended->Resuming/
 * Cancelled only; Resuming->Running/Suspended/Succeeded/Failed/Cancelled; terminals have no exits.
 * Baton additions: New->Suspended (gate suspends before executing), New->Succeeded/Failed (gate
 * SetResult/Block/invalid args), New->Cancelled (calls a finished run never reached).
 */
const EXPECTED: Record<ToolCallStatus, string> = {
  new: 'running suspended succeeded failed cancelled',
  running: 'suspended succeeded failed cancelled',
  suspended: 'resuming cancelled',
  resuming: 'running suspended succeeded failed cancelled',
  succeeded: '',
  failed: '',
  cancelled: '',
};

function expectedLegal(from: ToolCallStatus, to: ToolCallStatus): boolean {
  return EXPECTED[from].split(' ').includes(to);
}

describe('tool call transitions (7x7)', () => {
  const pairs = STATUSES.flatMap((from) => STATUSES.map((to) => [from, to] as const));

  it('has 49 pairs of which 16 are legal', () => {
    expect(pairs).toHaveLength(49);
    expect(pairs.filter(([f, t]) => canTransitionToolCall(f, t))).toHaveLength(16);
  });

  it.each(pairs)('%s -> %s', (from, to) => {
    const legal = expectedLegal(from, to);
    expect(canTransitionToolCall(from, to)).toBe(legal);
    if (legal) {
      expect(() => assertToolCallTransition(from, to, 'c1')).not.toThrow();
    } else {
      let caught: unknown;
      try {
        assertToolCallTransition(from, to, 'c1');
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(IllegalTransitionError);
      const err = caught as IllegalTransitionError;
      expect(err.code).toBe('illegal_transition');
      expect(err.details).toEqual({ machine: 'tool_call', from, to, subject: 'c1' });
      expect(err.message).toBe(`tool call c1 cannot move from ${from} to ${to}`);
    }
  });

  it('suspended cannot jump to running or a result', () => {
    for (const to of ['running', 'succeeded', 'failed'] as const)
      expect(canTransitionToolCall('suspended', to)).toBe(false);
  });

  it('terminal states are exactly succeeded, failed, cancelled and have no exits', () => {
    expect([...TERMINAL_TOOL_CALL_STATUSES].sort()).toEqual(['cancelled', 'failed', 'succeeded']);
    for (const s of STATUSES) {
      const terminal = s === 'succeeded' || s === 'failed' || s === 'cancelled';
      expect(isTerminalCallStatus(s)).toBe(terminal);
      if (terminal) {
        expect(TOOL_CALL_TRANSITIONS[s]).toEqual([]);
        for (const to of STATUSES) expect(canTransitionToolCall(s, to)).toBe(false);
      } else {
        expect(TOOL_CALL_TRANSITIONS[s].length).toBeGreaterThan(0);
      }
    }
  });

  it('no state lists itself and nothing returns to new', () => {
    for (const s of STATUSES) {
      expect(canTransitionToolCall(s, s)).toBe(false);
      expect(canTransitionToolCall(s, 'new')).toBe(false);
    }
  });

  it('omits the subject from the message when no id is given', () => {
    expect(() => assertToolCallTransition('failed', 'running')).toThrow(
      'tool call cannot move from failed to running',
    );
  });
});
