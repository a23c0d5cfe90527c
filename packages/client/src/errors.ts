import {
  ErrorBodySchema,
  ErrorCodeSchema,
  parseRetryAfter,
  type ClientErrorCode,
  type ErrorCode,
} from '@baton/protocol';
import { BatonApiError } from './baton-api-error.ts';
import { BatonClientError } from './baton-client-error.ts';

export { BatonApiError, BatonClientError, type ClientErrorCode };

/** Every error the client throws on purpose. */
export type BatonError = BatonApiError | BatonClientError;

/** True when `error` is an API error, with one of `codes` if any are given (narrows `code`). */
export function isApiError<C extends ErrorCode>(
  error: unknown,
  ...codes: C[]
): error is BatonApiError<C> {
  return BatonApiError.isInstance(error) && (codes.length === 0 || codes.includes(error.code as C));
}

/** True when `error` is a client-side error, with one of `codes` if any are given. */
export function isClientError(
  error: unknown,
  ...codes: ClientErrorCode[]
): error is BatonClientError {
  return BatonClientError.isInstance(error) && (codes.length === 0 || codes.includes(error.code));
}

/** The protocol's reading of `Retry-After`, offered here too since clients retry on it. */
export { parseRetryAfter };

/**
 * The typed error for a non-2xx response. Reads the body, so call it once per response. A body
 * that is not the API's error shape becomes `unexpected_response` (with the status kept), so a
 * proxy's 502 page is never mistaken for an API verdict.
 */
export async function errorFromResponse(res: Response): Promise<BatonApiError | BatonClientError> {
  let text: string;
  try {
    text = await res.text();
  } catch (error) {
    return new BatonClientError('network', `reading the ${res.status} response failed`, {
      cause: error,
      status: res.status,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = ErrorBodySchema.safeParse(json);
  if (!parsed.success) {
    // An unknown code from a newer API is still the API's word: keep its message, say so.
    const raw = json as { error?: { code?: unknown; message?: unknown } } | undefined;
    const snippet = text.slice(0, 200).replace(/\s+/g, ' ');
    const code = typeof raw?.error?.code === 'string' ? raw.error.code : undefined;
    return new BatonClientError(
      'unexpected_response',
      code !== undefined && !ErrorCodeSchema.safeParse(code).success
        ? `HTTP ${res.status} with an error code this client does not know (${code}): ${String(raw?.error?.message)}`
        : `HTTP ${res.status} ${res.statusText}: not a Baton error body (${snippet || 'empty'})`,
      { status: res.status },
    );
  }
  const { code, message, details } = parsed.data.error;
  return new BatonApiError(code, message, {
    status: res.status,
    details,
    retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
  });
}
