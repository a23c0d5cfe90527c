import { BatonError, type ErrorCode } from '@baton/protocol';

/**
 * An error answered by the API: `{"error": {code, message, details?}}` with its HTTP status.
 * `code` is one of the protocol's ErrorCodes, so `switch (err.code)` is exhaustive-checkable and
 * `isApiError` narrows it.
 */
export class BatonApiError<C extends ErrorCode = ErrorCode> extends BatonError<C> {
  static override readonly errorName: string = 'BatonApiError';
  readonly status: number;
  /** From `Retry-After` (429 and 503), in milliseconds. */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: C,
    message: string,
    opts: { status: number; details?: unknown; retryAfterMs?: number | undefined },
  ) {
    super(code, message, opts.details);
    // Spelled out: an app's bundler may minify class names, and logs read this one.
    this.name = 'BatonApiError';
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
  }
}
