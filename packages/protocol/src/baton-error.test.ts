import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { BatonError, isBatonError, isPublicErrorCode, type BatonErrorCode } from './baton-error.ts';
import { ErrorCodeSchema, type ErrorCode } from './errors.ts';
import type { InternalErrorCode } from './internal-error-codes.ts';

type BatonErrorModule = typeof import('./baton-error.ts');

/**
 * A second, separately evaluated copy of this module (same source, another class object): what
 * two installed copies of @baton/protocol in one process look like.
 */
async function secondCopy(): Promise<BatonErrorModule> {
  vi.resetModules();
  return import('./baton-error.ts');
}

describe('BatonError', () => {
  it('is recognised across copies of the package, where instanceof is not', async () => {
    const copy = await secondCopy();
    expect(copy.BatonError).not.toBe(BatonError);
    const foreign = new copy.BatonError('run_done', 'from the other copy');
    expect(foreign instanceof BatonError).toBe(false);
    expect(isBatonError(foreign)).toBe(true);
    expect(BatonError.isInstance(foreign)).toBe(true);
    expect(copy.isBatonError(new BatonError('not_found', 'from this copy'))).toBe(true);
  });

  it('recognises a subclass by class across copies, and by code', async () => {
    const copy = await secondCopy();
    class DoneError extends BatonError<'run_done'> {
      constructor() {
        super('run_done', 'done');
      }
    }
    class SpecialDoneError extends DoneError {}
    // The same class declared against the other copy: what a duplicated package's class is.
    const Foreign = { DoneError: class extends copy.BatonError<'run_done'> {} }.DoneError;
    Object.defineProperty(Foreign, 'name', { value: 'DoneError' });
    const foreign = new Foreign('run_done', 'from the other copy');
    expect(foreign instanceof DoneError).toBe(false);
    expect(DoneError.isInstance(foreign)).toBe(true);
    expect(BatonError.isInstance(foreign)).toBe(true);
    expect(DoneError.isInstance(new SpecialDoneError())).toBe(true);
    expect(SpecialDoneError.isInstance(new DoneError())).toBe(false);
    expect(DoneError.isInstance(new BatonError('run_done', 'same code, not the class'))).toBe(
      false,
    );
    expect(DoneError.isInstance(Object.assign(new Error('x'), { name: 'DoneError' }))).toBe(false);
    expect(isBatonError(foreign, 'run_done')).toBe(true);
    expect(isBatonError(foreign, 'not_found', 'run_done')).toBe(true);
    expect(isBatonError(foreign, 'not_found')).toBe(false);
    const unknownError: unknown = foreign;
    if (isBatonError(unknownError, 'run_done'))
      expectTypeOf(unknownError.code).toEqualTypeOf<'run_done'>();
    if (DoneError.isInstance(unknownError)) expectTypeOf(unknownError).toEqualTypeOf<DoneError>();
  });

  it('goes by a declared errorName, which survives a bundler minifying class names', async () => {
    const copy = await secondCopy();
    class PlainError extends BatonError<'run_done'> {
      static override readonly errorName: string = 'PlainError';
    }
    // The other copy's class, minified to a one-letter name.
    const Minified = {
      e: class extends copy.BatonError<'run_done'> {
        static override readonly errorName: string = 'PlainError';
      },
    }.e;
    const foreign = new Minified('run_done', 'from a minified bundle');
    expect(Minified.name).toBe('e');
    expect(foreign.name).toBe('PlainError');
    expect(PlainError.isInstance(foreign)).toBe(true);
    expect(Minified.isInstance(new PlainError('run_done', 'here'))).toBe(true);
  });

  it('is not fooled by look-alikes', () => {
    expect(isBatonError(Object.assign(new Error('x'), { code: 'run_done' }))).toBe(false);
    expect(isBatonError({ code: 'run_done', message: 'x' })).toBe(false);
    expect(isBatonError(null)).toBe(false);
    expect(isBatonError('run_done')).toBe(false);
  });

  it('keeps its subclass name, code, details and cause', () => {
    class ThingError extends BatonError<'conflict'> {
      constructor(cause: unknown) {
        super('conflict', 'thing', { id: 1 }, { cause });
      }
    }
    const cause = new Error('root');
    const error = new ThingError(cause);
    expect(error).toBeInstanceOf(Error);
    expect(isBatonError(error)).toBe(true);
    expect(error).toMatchObject({ name: 'ThingError', code: 'conflict', details: { id: 1 } });
    expect(error.cause).toBe(cause);
    // The marker is not enumerable: spreads, JSON and logs show what they showed before.
    expect(Object.getOwnPropertyDescriptor(error, Symbol.for('baton.error'))?.enumerable).toBe(
      false,
    );
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      name: 'ThingError',
      code: 'conflict',
      details: { id: 1 },
    });
  });

  it('tells public codes from internal ones', () => {
    for (const code of ErrorCodeSchema.options) expect(isPublicErrorCode(code)).toBe(true);
    const internal: InternalErrorCode[] = ['version_conflict', 'invalid_cursor', 'network'];
    for (const code of internal) expect(isPublicErrorCode(code)).toBe(false);
  });

  it('keeps the public and internal code unions apart (type test)', () => {
    // An internal code that is also a wire code would be sent as it is by the API's mapping.
    expectTypeOf<Extract<InternalErrorCode, ErrorCode>>().toBeNever();
    expectTypeOf<BatonErrorCode>().toEqualTypeOf<ErrorCode | InternalErrorCode>();
  });
});
