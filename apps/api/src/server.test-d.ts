/**
 * Type test: startApi's logger option is the structural BatonLogger, which pino satisfies; its
 * redis option takes the caller's ioredis Redis or Cluster, as createWorker's does.
 */
import type { BatonLogger, RedisClient } from '@baton/runtime';
import type { Logger } from 'pino';
import { describe, expectTypeOf, it } from 'vitest';
import type { StartApiOptions } from './server.ts';

describe('StartApiOptions.logger', () => {
  it('takes a pino logger or any BatonLogger', () => {
    expectTypeOf<StartApiOptions['logger']>().toEqualTypeOf<BatonLogger | undefined>();
    expectTypeOf<Logger>().toExtend<NonNullable<StartApiOptions['logger']>>();
  });
});

describe('StartApiOptions.redis', () => {
  it('takes an ioredis Redis or Cluster, as createWorker does', () => {
    // RedisClient = ioredis Redis | Cluster: what createWorker({ redis }) takes besides a URL.
    expectTypeOf<StartApiOptions['redis']>().toEqualTypeOf<RedisClient | undefined>();
  });
});
