import { BatonError } from '@baton/protocol';

/** The Redis server is older than Baton needs (sharded pub/sub came with Redis 7). */
export class RedisVersionError extends BatonError<'unavailable'> {
  constructor(message: string) {
    super('unavailable', message);
  }
}
