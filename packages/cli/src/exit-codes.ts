import { BatonApiError, BatonClientError } from '@baton/client';
import type { ErrorCode, RunEvent } from '@baton/protocol';

/**
 * What `baton` exits with (documented in docs/client-and-cli.md). Scripts branch on these, so a number,
 * once published, keeps its meaning.
 */
export const EXIT = {
  /** The command succeeded; a watched run ended normally (natural end, stop condition). */
  ok: 0,
  /** A bug or an error nobody planned for. */
  internal: 1,
  /** Bad command line: unknown option, missing argument, --payload that is not JSON. */
  usage: 2,
  /** No API key, or the API refused it (unauthorized, forbidden). */
  auth: 3,
  /** The run, thread or agent does not exist (for this key). */
  notFound: 4,
  /** The API refused the request (validation, conflict, run already done, payload invalid...). */
  refused: 5,
  /** The API could not be reached or kept failing (network, timeout, 5xx, rate limited). */
  unavailable: 6,
  /** The watched run ended cancelled. */
  runCancelled: 10,
  /** The watched run ended with an error, or a tool gate blocked it. */
  runFailed: 11,
  /** The watched run waits for a decision and the command stops there (--until suspended). */
  runWaiting: 12,
  /** Interrupted (Ctrl-C). */
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

const BY_API_CODE: Readonly<Record<ErrorCode, ExitCode>> = {
  unauthorized: EXIT.auth,
  forbidden: EXIT.auth,
  not_found: EXIT.notFound,
  run_not_found: EXIT.notFound,
  unknown_agent: EXIT.notFound,
  bad_request: EXIT.refused,
  validation_failed: EXIT.refused,
  conflict: EXIT.refused,
  idempotency_conflict: EXIT.refused,
  run_done: EXIT.refused,
  run_cancelled: EXIT.refused,
  run_active: EXIT.refused,
  event_log_rewound: EXIT.refused,
  unsupported_media_type: EXIT.refused,
  thread_busy: EXIT.refused,
  call_not_suspended: EXIT.refused,
  call_unknown: EXIT.refused,
  decision_conflict: EXIT.refused,
  payload_invalid: EXIT.refused,
  illegal_transition: EXIT.refused,
  payload_too_large: EXIT.refused,
  rate_limited: EXIT.unavailable,
  internal: EXIT.unavailable,
  unavailable: EXIT.unavailable,
  webhook_target_refused: EXIT.refused,
  quota_exceeded: EXIT.refused,
  thread_too_large: EXIT.refused,
  fork_point_invalid: EXIT.refused,
  run_not_replayable: EXIT.refused,
};

/** The exit code for an error thrown by the client (or anything else). */
export function exitCodeForError(error: unknown): ExitCode {
  if (BatonApiError.isInstance(error)) return BY_API_CODE[error.code];
  if (BatonClientError.isInstance(error)) {
    switch (error.code) {
      case 'aborted':
        return EXIT.interrupted;
      case 'unexpected_response':
        return (error.status ?? 0) >= 500 ? EXIT.unavailable : EXIT.internal;
      case 'network':
      case 'timeout':
      case 'stream_gap':
      case 'reconnect_exhausted':
        return EXIT.unavailable;
    }
  }
  return EXIT.internal;
}

/** The exit code for the last event a watch saw. */
export function exitCodeForRunEnd(event: RunEvent | undefined): ExitCode {
  if (event?.type !== 'run.finished') return EXIT.unavailable;
  if (event.status === 'waiting') return EXIT.runWaiting;
  switch (event.termination.kind) {
    case 'natural_end':
    case 'behavior_requested':
    case 'stopped':
      return EXIT.ok;
    case 'cancelled':
      return EXIT.runCancelled;
    case 'blocked':
    case 'error':
    case 'suspended':
      return EXIT.runFailed;
  }
}
