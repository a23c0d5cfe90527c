import { ErrorCodeSchema, type ErrorCode } from './errors.ts';
import type { InternalErrorCode } from './internal-error-codes.ts';

/** Every code a BatonError may carry: the wire's ErrorCodes and the internal ones. */
export type BatonErrorCode = ErrorCode | InternalErrorCode;

// A registered symbol, not a class identity: two copies of this package in one process (a
// bundled client next to the installed one, a duplicated node_modules) still recognise each
// other's errors.
const MARKER = Symbol.for('baton.error');

/**
 * Base of every error Baton raises on purpose: a stable code plus a message that says what to
 * fix. Recognise one with {@link isBatonError} rather than `instanceof`, which fails across
 * package copies.
 */
export class BatonError<C extends BatonErrorCode = BatonErrorCode> extends Error {
  readonly code: C;
  readonly details: unknown;

  constructor(code: C, message: string, details?: unknown, options?: ErrorOptions) {
    super(message, options);
    Object.defineProperty(this, MARKER, { value: true });
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }

  /** Same as {@link isBatonError}. */
  static isInstance(error: unknown): error is BatonError {
    return isBatonError(error);
  }
}

/** True for a BatonError from any copy of @baton/protocol. */
export function isBatonError(error: unknown): error is BatonError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { [MARKER]?: unknown })[MARKER] === true
  );
}

const PUBLIC_CODES: ReadonlySet<string> = new Set(ErrorCodeSchema.options);

/** True when `code` may be sent to a client as it is. */
export function isPublicErrorCode(code: BatonErrorCode): code is ErrorCode {
  return PUBLIC_CODES.has(code);
}
