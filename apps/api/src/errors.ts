import { BatonError } from '@baton/core';
import { isRedisUnavailable } from '@baton/runtime';
import type { ErrorBody, ErrorCode } from '@baton/protocol';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { ZodError, type core } from 'zod';

/** The one place typed error codes become HTTP statuses. */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = {
  bad_request: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  run_not_found: 404,
  conflict: 409,
  idempotency_conflict: 409,
  run_done: 409,
  run_cancelled: 409,
  run_active: 409,
  event_log_rewound: 409,
  thread_busy: 409,
  call_not_suspended: 409,
  call_unknown: 409,
  decision_conflict: 409,
  illegal_transition: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_agent: 422,
  payload_invalid: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  webhook_target_refused: 400,
  quota_exceeded: 409,
};

export function statusFor(code: ErrorCode): number {
  return STATUS_BY_CODE[code];
}

/** 429: carries the Retry-After the error middleware sends. */
export class RateLimitedError extends BatonError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, details?: unknown) {
    super('rate_limited', message, details);
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
  }
}

export function badRequest(message: string, details?: unknown): BatonError {
  return new BatonError('bad_request', message, details);
}

export function notFound(message: string): BatonError {
  return new BatonError('not_found', message);
}

export interface IssueDetail {
  readonly path: string;
  readonly message: string;
  readonly code: string;
}

/** `input.messages[0].content` style path of a zod issue ('(body)' for the root). */
export function issuePath(path: readonly PropertyKey[], root = 'body'): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? `(${root})` : out;
}

function describeIssue(issue: core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys')
    return `unknown field(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}; remove them`;
  return issue.message;
}

/** A zod failure as a 400 that names every offending field. */
export function validationError(error: ZodError, where = 'body'): BatonError {
  const details: IssueDetail[] = error.issues.map((issue) => ({
    path: issuePath(issue.path, where),
    message: describeIssue(issue),
    code: issue.code,
  }));
  const summary = details
    .slice(0, 5)
    .map((d) => `${d.path}: ${d.message}`)
    .join('; ');
  const more = details.length > 5 ? ` (and ${details.length - 5} more)` : '';
  return new BatonError('validation_failed', `invalid request ${where}: ${summary}${more}`, {
    issues: details,
  });
}

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  statusCode?: number;
  limit?: number;
}

/** 503: Redis (or the durability it promises) cannot be used right now; retry shortly. */
export class UnavailableError extends BatonError {
  readonly retryAfterSeconds = 1;
  constructor(
    message = 'the store is unavailable right now (Redis is unreachable); retry shortly',
  ) {
    super('unavailable', message);
  }
}

/** The 4xx an error from express, body-parser or http-errors already carries, if any. */
function clientStatusOf(err: BodyParserError): number | undefined {
  const status = err.status ?? err.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/** A 4xx from a library keeps its meaning: never an 'internal' 500 for the client's mistake. */
function fromClientStatus(err: BodyParserError, status: number): BatonError {
  if (err instanceof URIError || /decode param/i.test(err.message))
    return new BatonError(
      'bad_request',
      'the URL contains a malformed %-escape; percent-encode ids with encodeURIComponent',
    );
  const code = (err as { code?: unknown }).code;
  if ((typeof code === 'string' && code.startsWith('Z_')) || /decompression/i.test(err.message))
    return new BatonError(
      'bad_request',
      'the request body does not match its Content-Encoding; send it uncompressed or really compressed',
    );
  switch (status) {
    case 401:
      return new BatonError('unauthorized', 'missing or invalid API key');
    case 403:
      return new BatonError('forbidden', 'this request is not allowed');
    case 404:
      return new BatonError('not_found', 'not found; see /openapi.json');
    case 413:
      return new BatonError('payload_too_large', 'request is too large');
    case 415:
      return new BatonError(
        'unsupported_media_type',
        `unsupported media type (${err.message.slice(0, 200)})`,
      );
    case 429:
      return new RateLimitedError('too many requests; retry later', 1);
    default:
      return new BatonError('bad_request', `bad request (${err.message.slice(0, 200)})`);
  }
}

/** Converts anything thrown into a BatonError (unknown errors become 'internal'). */
export function toBatonError(err: unknown): BatonError {
  if (err instanceof BatonError) return err;
  if (err instanceof ZodError) return validationError(err);
  if (isRedisUnavailable(err)) return new UnavailableError();
  if ((err as { code?: unknown } | null)?.code === 'unavailable')
    return new UnavailableError((err as Error).message);
  if (err instanceof Error) {
    const e = err as BodyParserError;
    switch (e.type) {
      case 'entity.parse.failed':
        return new BatonError(
          'bad_request',
          `request body is not valid JSON (${e.message}); send a JSON object with Content-Type: application/json`,
        );
      case 'entity.too.large':
        return new BatonError(
          'payload_too_large',
          `request body is larger than the limit of ${e.limit ?? '?'} bytes`,
          { limitBytes: e.limit },
        );
      case 'encoding.unsupported':
        return new BatonError(
          'unsupported_media_type',
          `${e.message}; send the body uncompressed, or gzip, deflate or br`,
        );
      case 'charset.unsupported':
        return new BatonError('unsupported_media_type', `${e.message}; send UTF-8 JSON`);
      case 'request.aborted':
        return new BatonError('bad_request', 'request was aborted by the client');
      default:
        break;
    }
    // InvalidCursorError and friends from the stores carry a string code.
    if ((err as { code?: unknown }).code === 'invalid_cursor')
      return new BatonError(
        'bad_request',
        'cursor is invalid; pass the nextCursor of a previous page unchanged',
      );
    const status = clientStatusOf(e);
    if (status !== undefined) return fromClientStatus(e, status);
  }
  return new BatonError('internal', 'internal error');
}

export function errorBody(err: BatonError): ErrorBody {
  return {
    error: {
      code: err.code,
      message: err.message,
      ...(err.details !== undefined ? { details: err.details } : {}),
    },
  };
}

/** The one error middleware: every error body is {error: {code, message, details?}}. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      // A streaming response already started: nothing left to say but close it.
      next(err);
      return;
    }
    const baton = toBatonError(err);
    const status = statusFor(baton.code);
    if (status >= 500) (req.log ?? logger).error({ err }, 'request failed');
    if (baton instanceof RateLimitedError || baton instanceof UnavailableError)
      res.setHeader('Retry-After', String(baton.retryAfterSeconds));
    if (baton.code === 'unauthorized' && req.originalUrl.startsWith('/admin'))
      res.setHeader('WWW-Authenticate', 'Basic realm="baton-admin", charset="UTF-8"');
    // A refused request whose body was never read: answer and hang up rather than keep reading
    // what may be a slow trickle (401s and 429s come before the body parser).
    if (!req.complete) res.setHeader('Connection', 'close');
    res.status(status).json(errorBody(baton));
  };
}

/** Unknown routes: a JSON 404 like every other error. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(notFound(`no route for ${req.method} ${req.path}; see /openapi.json`));
};
