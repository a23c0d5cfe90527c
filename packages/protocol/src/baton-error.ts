import { ErrorCodeSchema, type ErrorCode } from './errors.ts';
import type { InternalErrorCode } from './internal-error-codes.ts';

/** Every code a BatonError may carry: the wire's ErrorCodes and the internal ones. */
export type BatonErrorCode = ErrorCode | InternalErrorCode;

// Registered symbols, not class identities: two copies of this package in one process (a
// bundled client next to the installed one, a duplicated node_modules) still recognise each
// other's errors. MARKER says "a BatonError"; CLASSES lists the names of the classes it was built
// from (its own up to BatonError), so a subclass is recognised by name the same way.
const MARKER = Symbol.for('baton.error');
const CLASSES = Symbol.for('baton.error.classes');

/** A class's stable name: the `errorName` it declares (a bundler may minify class names), else its name. */
function nameOf(c: object): string {
  return Object.hasOwn(c, 'errorName')
    ? String((c as { errorName: unknown }).errorName)
    : (c as { name: string }).name;
}

function classNames(target: object): readonly string[] {
  const names: string[] = [];
  for (
    let c: unknown = target;
    typeof c === 'function' && c !== Error;
    c = Object.getPrototypeOf(c)
  )
    names.push(nameOf(c));
  return Object.freeze(names);
}

/**
 * Base of every error Baton raises on purpose: a stable code plus a message that says what to
 * fix. Recognise one with {@link isBatonError} (optionally by code) or `XxxError.isInstance(e)`
 * rather than `instanceof`, which fails across package copies.
 */
export class BatonError<C extends BatonErrorCode = BatonErrorCode> extends Error {
  /**
   * The name markers and `name` use; a class that may be bundled and minified (the client's)
   * spells its own out, others go by their class name.
   */
  static readonly errorName: string = 'BatonError';
  readonly code: C;
  readonly details: unknown;

  constructor(code: C, message: string, details?: unknown, options?: ErrorOptions) {
    super(message, options);
    Object.defineProperty(this, MARKER, { value: true });
    Object.defineProperty(this, CLASSES, { value: classNames(new.target) });
    this.name = nameOf(new.target);
    this.code = code;
    this.details = details;
  }

  /**
   * True when `error` was built by this class or a subclass, in any copy of the package:
   * `RunDoneError.isInstance(e)` is the copy-proof `RunDoneError.isInstance(e)`. Classes are told
   * apart by name ({@link BatonError.errorName}), so two Baton error classes never share one.
   */
  static isInstance<T>(this: abstract new (...args: never[]) => T, error: unknown): error is T {
    if (!isBatonError(error)) return false;
    const names = (error as { [CLASSES]?: unknown })[CLASSES];
    // An error from an older copy carries no list: its own class name is all it says.
    const name = nameOf(this);
    if (!Array.isArray(names)) return name === 'BatonError' || error.name === name;
    return names.includes(name);
  }
}

/**
 * True for a BatonError from any copy of @baton/protocol; given codes, only for one carrying one
 * of them (narrows `code`).
 */
export function isBatonError<C extends BatonErrorCode>(
  error: unknown,
  ...codes: C[]
): error is BatonError<C> {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { [MARKER]?: unknown })[MARKER] === true &&
    (codes.length === 0 || codes.includes((error as BatonError).code as C))
  );
}

const PUBLIC_CODES: ReadonlySet<string> = new Set(ErrorCodeSchema.options);

/** True when `code` may be sent to a client as it is. */
export function isPublicErrorCode(code: BatonErrorCode): code is ErrorCode {
  return PUBLIC_CODES.has(code);
}
