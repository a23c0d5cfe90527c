/**
 * Type tests (vitest typecheck, unit project) of the status transition tables: their mapped
 * types are what makes a status added to the protocol without a row a compile error.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { RunStatus, ToolCallStatus } from '@baton/protocol';
import { RUN_TRANSITIONS, deriveRunStatus, terminationToRunStatus } from './run-status.ts';
import { TERMINAL_TOOL_CALL_STATUSES, TOOL_CALL_TRANSITIONS } from './tool-call-status.ts';

type RunTable = typeof RUN_TRANSITIONS;
type ToolCallTable = typeof TOOL_CALL_TRANSITIONS;

describe('RUN_TRANSITIONS', () => {
  it('has one row per run status, each listing run statuses', () => {
    expectTypeOf<keyof RunTable>().toEqualTypeOf<RunStatus>();
    expectTypeOf<RunTable[RunStatus]>().toEqualTypeOf<readonly RunStatus[]>();
  });

  it('does not compile without a row for every status, or with a status that is none', () => {
    // @ts-expect-error the row of 'done' is missing
    const missing: RunTable = { created: ['running'], running: ['done'], waiting: ['done'] };
    const unknownTarget: RunTable = {
      created: ['running'],
      running: ['done'],
      waiting: ['done'],
      // @ts-expect-error 'paused' is no run status
      done: ['paused'],
    };
    const extraRow: RunTable = {
      created: [],
      running: [],
      waiting: [],
      done: [],
      // @ts-expect-error 'paused' is no run status
      paused: [],
    };
    expectTypeOf([missing, unknownTarget, extraRow]).items.toEqualTypeOf<RunTable>();
  });

  it('maps terminations and call statuses to run statuses', () => {
    expectTypeOf(terminationToRunStatus).returns.toEqualTypeOf<RunStatus>();
    expectTypeOf(deriveRunStatus).parameter(0).toEqualTypeOf<Iterable<ToolCallStatus>>();
    expectTypeOf(deriveRunStatus).returns.toEqualTypeOf<'running' | 'waiting' | 'done'>();
    expectTypeOf(deriveRunStatus).returns.toExtend<RunStatus>();
  });
});

describe('TOOL_CALL_TRANSITIONS', () => {
  it('has one row per tool-call status, each listing tool-call statuses', () => {
    expectTypeOf<keyof ToolCallTable>().toEqualTypeOf<ToolCallStatus>();
    expectTypeOf<ToolCallTable[ToolCallStatus]>().toEqualTypeOf<readonly ToolCallStatus[]>();
    expectTypeOf(TERMINAL_TOOL_CALL_STATUSES).toEqualTypeOf<ReadonlySet<ToolCallStatus>>();
  });

  it('does not compile without a row for every status, or with a status that is none', () => {
    // @ts-expect-error the row of 'cancelled' is missing
    const missing: ToolCallTable = {
      new: [],
      running: [],
      suspended: [],
      resuming: [],
      succeeded: [],
      failed: [],
    };
    const unknownTarget: ToolCallTable = {
      new: [],
      running: [],
      // @ts-expect-error 'approved' is no tool-call status
      suspended: ['approved'],
      resuming: [],
      succeeded: [],
      failed: [],
      cancelled: [],
    };
    expectTypeOf([missing, unknownTarget]).items.toEqualTypeOf<ToolCallTable>();
  });
});
