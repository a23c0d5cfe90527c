import { BatonError } from '@baton/protocol';

/**
 * 400: PostgreSQL refused a value of the request (SQLSTATE class 22, "data exception": text
 * that is no number, a number out of its column's range, a NUL character in text). The API
 * validates what it can at its edge; this is the net under it, so a value that slipped through
 * is the client's to fix, never a 500.
 */
export class ArchiveValueRefusedError extends BatonError<'bad_request'> {
  constructor(cause: unknown) {
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    super(
      'bad_request',
      `a value of this request cannot be read from the archive (PostgreSQL refused it${detail}); check the query parameters and cursor`,
    );
    this.cause = cause;
  }
}

/** Whether `error` is PostgreSQL's data exception (SQLSTATE 22xxx) for a value it was given. */
export function isArchiveValueRefused(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}
