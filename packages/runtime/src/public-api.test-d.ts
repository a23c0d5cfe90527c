/**
 * Type test (vitest typecheck, unit project) of what `@baton/runtime`'s public root promises:
 * pino, the default logger, fits the structural `BatonLogger` every public option takes, and the
 * named option and result types are the ones the functions use.
 */
import type { Logger } from 'pino';
import { describe, expectTypeOf, it } from 'vitest';
import {
  createLogger,
  startTracing,
  type BatonLogger,
  type BatonRuntimeOptions,
  type CreatedRun,
  type RunService,
  type StartTracingOptions,
} from './index.ts';

describe('@baton/runtime public types', () => {
  it('a pino logger is a BatonLogger', () => {
    expectTypeOf<Logger>().toExtend<BatonLogger>();
    expectTypeOf(createLogger).returns.toExtend<BatonLogger>();
    expectTypeOf<ReturnType<Logger['child']>>().toExtend<BatonLogger>();
  });

  it("the runtime's options take a BatonLogger, not pino's Logger", () => {
    expectTypeOf<BatonRuntimeOptions['logger']>().toEqualTypeOf<BatonLogger>();
  });

  it('a logger missing a level is not a BatonLogger', () => {
    expectTypeOf<Omit<BatonLogger, 'debug'>>().not.toExtend<BatonLogger>();
  });

  it('names the types its functions take and return', () => {
    expectTypeOf(startTracing).parameter(0).toEqualTypeOf<StartTracingOptions>();
    expectTypeOf<Awaited<ReturnType<RunService['createRun']>>>().toEqualTypeOf<CreatedRun>();
  });
});
