import { BatonError } from '@baton/protocol';

/** REDIS_URL cannot be used; the message says what a valid one looks like. */
export class RedisUrlError extends BatonError<'config'> {
  constructor(message: string) {
    super('config', message);
  }
}
