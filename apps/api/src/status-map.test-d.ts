/**
 * Type test (vitest typecheck, unit project) of the one table where error codes become HTTP
 * statuses: a code added to the protocol without a status must not compile (it would be a 500,
 * or undefined, at run time).
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { ErrorCode } from '@baton/protocol';
import { STATUS_BY_CODE, statusFor } from './errors.ts';

type StatusMap = typeof STATUS_BY_CODE;

describe('STATUS_BY_CODE', () => {
  it('gives every error code of the protocol a status', () => {
    expectTypeOf<ErrorCode>().toExtend<keyof StatusMap>();
    expectTypeOf<StatusMap[ErrorCode]>().toEqualTypeOf<number>();
    expectTypeOf(statusFor).parameter(0).toEqualTypeOf<ErrorCode>();
    expectTypeOf(statusFor).returns.toEqualTypeOf<number>();
  });

  it('does not compile with a code left out', () => {
    const { conflict: _left, ...rest } = STATUS_BY_CODE;
    // @ts-expect-error 'conflict' has no status
    const missing: StatusMap = rest;
    expectTypeOf(missing).toEqualTypeOf<StatusMap>();
  });

  it('does not compile with a code the protocol does not have', () => {
    // @ts-expect-error 'teapot' is no error code
    const unknown: StatusMap = { ...STATUS_BY_CODE, teapot: 418 };
    expectTypeOf(unknown).toEqualTypeOf<StatusMap>();
  });
});
