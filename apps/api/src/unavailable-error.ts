import { BatonError } from '@baton/protocol';

/** 503: Redis (or the durability it promises) cannot be used right now; retry shortly. */
export class UnavailableError extends BatonError<'unavailable'> {
  readonly retryAfterSeconds = 1;
  constructor(
    message = 'the store is unavailable right now (Redis is unreachable); retry shortly',
  ) {
    super('unavailable', message);
  }
}
