import { BatonError } from '@baton/protocol';

/** 429: carries the Retry-After the error middleware sends. */
export class RateLimitedError extends BatonError<'rate_limited'> {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, details?: unknown) {
    super('rate_limited', message, details);
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
  }
}
