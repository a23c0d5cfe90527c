import { BatonError } from '@baton/protocol';

/** 503: the archive (PostgreSQL) cannot be reached right now; retry shortly. */
export class ArchiveUnavailableError extends BatonError<'unavailable'> {
  constructor(cause: unknown) {
    super('unavailable', 'the archive (PostgreSQL) cannot be reached right now; retry shortly');
    this.cause = cause;
  }
}

/** Node socket errors and PostgreSQL's "shutting down / starting up" states. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
]);

/** Whether `error` says the archive could not be reached (not that a query was wrong). */
export function isArchiveUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    error.message,
  );
}
