/** Type test: createWorker's logger option is the structural BatonLogger, which pino satisfies. */
import type { BatonLogger } from '@baton/runtime';
import type { Logger } from 'pino';
import { describe, expectTypeOf, it } from 'vitest';
import type { CreateWorkerOptions } from './create-worker.ts';

describe('CreateWorkerOptions.logger', () => {
  it('takes a pino logger or any BatonLogger', () => {
    expectTypeOf<CreateWorkerOptions['logger']>().toEqualTypeOf<BatonLogger | undefined>();
    expectTypeOf<Logger>().toExtend<NonNullable<CreateWorkerOptions['logger']>>();
  });
});
