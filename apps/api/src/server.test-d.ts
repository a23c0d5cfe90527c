/** Type test: startApi's logger option is the structural BatonLogger, which pino satisfies. */
import type { BatonLogger } from '@baton/runtime';
import type { Logger } from 'pino';
import { describe, expectTypeOf, it } from 'vitest';
import type { StartApiOptions } from './server.ts';

describe('StartApiOptions.logger', () => {
  it('takes a pino logger or any BatonLogger', () => {
    expectTypeOf<StartApiOptions['logger']>().toEqualTypeOf<BatonLogger | undefined>();
    expectTypeOf<Logger>().toExtend<NonNullable<StartApiOptions['logger']>>();
  });
});
