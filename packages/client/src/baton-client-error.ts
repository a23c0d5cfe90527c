import { BatonError, type ClientErrorCode } from '@baton/protocol';

/** A failure on the client's side of the wire; `code` says which. */
export class BatonClientError extends BatonError<ClientErrorCode> {
  static override readonly errorName: string = 'BatonClientError';
  /** HTTP status of the response that caused it, when there was one. */
  readonly status: number | undefined;

  constructor(
    code: ClientErrorCode,
    message: string,
    opts: { cause?: unknown; status?: number } = {},
  ) {
    super(code, message, undefined, opts.cause === undefined ? undefined : { cause: opts.cause });
    // Spelled out: an app's bundler may minify class names, and logs read this one.
    this.name = 'BatonClientError';
    this.status = opts.status;
  }
}
