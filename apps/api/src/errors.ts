import { isRedisUnavailable } from '@baton/runtime/internal';
import {
  BatonError,
  isBatonError,
  isPublicErrorCode,
  type ErrorBody,
  type ErrorCode,
  type InternalErrorCode,
} from '@baton/protocol';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { ZodError, type core } from 'zod';
import { RateLimitedError } from './rate-limited-error.ts';
import { UnavailableError } from './unavailable-error.ts';
import { redactWaitpointPath } from './logger.ts';

export { RateLimitedError, UnavailableError };

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
  thread_too_large: 413,
  fork_point_invalid: 422,
  run_not_replayable: 409,
};

export function statusFor(code: ErrorCode): number {
  return STATUS_BY_CODE[code];
}

const INTERNAL = { code: 'internal', message: 'internal error' } as const;

/**
 * What each internal code says to a client. Internal codes never reach the wire: their messages
 * name runs, versions and leases a client cannot act on, so most become the generic 500.
 */
export const PUBLIC_FORM_OF: Readonly<
  Record<InternalErrorCode, { readonly code: ErrorCode; readonly message: string }>
> = {
  // Every CAS writer retries a conflict against a fresh load; one that still loses has met a
  // burst of writers on the same run. The request was fine and the same request will succeed
  // once the burst is over: 503 + Retry-After says exactly that (@baton/client's isRetryable()
  // counts it retryable), where a 409 would tell the caller to change something it need not.
  version_conflict: {
    code: 'unavailable',
    message: 'the run was changed concurrently while this request was handled; retry it shortly',
  },
  invalid_cursor: {
    code: 'bad_request',
    message: 'cursor is invalid; pass the nextCursor of a previous page unchanged',
  },
  model_call_timeout: INTERNAL,
  tool_timeout: INTERNAL,
  tool_schema_missing: INTERNAL,
  corrupt_checkpoint: INTERNAL,
  // During a rolling upgrade an API of the release before meets a run a newer worker wrote in a
  // format it does not read: the API of the newer release answers the same request.
  newer_format: {
    code: 'unavailable',
    message: 'this run is stored in a format of a newer release of Baton; retry shortly',
  },
  lease_lost: INTERNAL,
  event_gap: INTERNAL,
  run_released: INTERNAL,
  webhook_secret: INTERNAL,
  webhook_attempt: INTERNAL,
  config: INTERNAL,
  agents_file_unreadable: INTERNAL,
  agents_file_invalid: INTERNAL,
  agents_missing_env: INTERNAL,
  agents_module_invalid: INTERNAL,
  agents_source_unknown: INTERNAL,
  mcp_unavailable: INTERNAL,
  // The client's and the CLI's own codes: thrown on the far side of the wire, never here.
  network: INTERNAL,
  timeout: INTERNAL,
  unexpected_response: INTERNAL,
  stream_gap: INTERNAL,
  reconnect_exhausted: INTERNAL,
  aborted: INTERNAL,
  field_invalid: INTERNAL,
  usage: INTERNAL,
};

/** The error as a client may see it: public codes pass, internal ones take their public form. */
function publicForm(err: BatonError): BatonError<ErrorCode> {
  const { code } = err;
  if (isPublicErrorCode(code)) return err as BatonError<ErrorCode>;
  const form = PUBLIC_FORM_OF[code];
  return new BatonError(form.code, form.message);
}

export function badRequest(message: string, details?: unknown): BatonError<ErrorCode> {
  return new BatonError('bad_request', message, details);
}

export function notFound(message: string): BatonError<ErrorCode> {
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
export function validationError(error: ZodError, where = 'body'): BatonError<ErrorCode> {
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

/** The 4xx an error from express, body-parser or http-errors already carries, if any. */
function clientStatusOf(err: BodyParserError): number | undefined {
  const status = err.status ?? err.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/** A 4xx from a library keeps its meaning: never an 'internal' 500 for the client's mistake. */
function fromClientStatus(err: BodyParserError, status: number): BatonError<ErrorCode> {
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

/**
 * Converts anything thrown into a BatonError with a public code (unknown errors become
 * 'internal'): Baton's own errors by their code, library errors by what they are.
 */
export function toBatonError(err: unknown): BatonError<ErrorCode> {
  if (isBatonError(err)) return publicForm(err);
  if (err instanceof ZodError) return validationError(err);
  if (isRedisUnavailable(err)) return new UnavailableError();
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
    const status = clientStatusOf(e);
    if (status !== undefined) return fromClientStatus(e, status);
  }
  return new BatonError('internal', 'internal error');
}

export function errorBody(err: BatonError<ErrorCode>): ErrorBody {
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
    const retryAfter = retryAfterSeconds(baton);
    if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
    if (baton.code === 'unauthorized' && req.originalUrl.startsWith('/admin'))
      res.setHeader('WWW-Authenticate', 'Basic realm="baton-admin", charset="UTF-8"');
    // A refused request whose body was never read: answer and hang up rather than keep reading
    // what may be a slow trickle (401s and 429s come before the body parser).
    if (!req.complete) res.setHeader('Connection', 'close');
    res.status(status).json(errorBody(baton));
  };
}

/** Every 429 and 503 says when to come back: its own delay, else a second. */
function retryAfterSeconds(err: BatonError<ErrorCode>): number | undefined {
  if (RateLimitedError.isInstance(err) || UnavailableError.isInstance(err))
    return err.retryAfterSeconds;
  return err.code === 'rate_limited' || err.code === 'unavailable' ? 1 : undefined;
}

/** Unknown routes: a JSON 404 like every other error. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(notFound(`no route for ${req.method} ${redactWaitpointPath(req.path)}; see /openapi.json`));
};
