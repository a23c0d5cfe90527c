/** Type tests: createWorker's logger option is the structural BatonLogger (pino satisfies it); its config takes camelCase settings. */
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

describe('CreateWorkerOptions.config', () => {
  it('takes the settings in camelCase, typed as parsed', () => {
    type Config = NonNullable<CreateWorkerOptions['config']>;
    expectTypeOf<Config['workerConcurrency']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<Config['taskQueue']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Config['reconciler']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<Config>().not.toHaveProperty('redisUrl');
    expectTypeOf<Config>().not.toHaveProperty('prefix');
  });
});
