import { z } from 'zod';

/** Stable error codes; HTTP mapping lives in one place in apps/api. */
export const ErrorCodeSchema = z.enum([
  'bad_request',
  'validation_failed',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'idempotency_conflict',
  'run_not_found',
  'run_done',
  'run_cancelled',
  'run_active',
  'event_log_rewound',
  'thread_busy',
  'unknown_agent',
  'call_not_suspended',
  'call_unknown',
  'decision_conflict',
  'payload_invalid',
  'illegal_transition',
  'rate_limited',
  'payload_too_large',
  'unsupported_media_type',
  'internal',
  'unavailable',
  /** A webhook URL that resolves to a loopback, private or otherwise internal address (SSRF). */
  'webhook_target_refused',
  /** A per-tenant quota (e.g. SCHEDULES_MAX_PER_TENANT) is used up; the message says how to raise it. */
  'quota_exceeded',
  /** The thread holds, or with this run would hold, more than THREAD_MAX_MESSAGES / _BYTES. */
  'thread_too_large',
  /** A fork's atSeq is outside the run's log, or its input does not fit the state at that seq. */
  'fork_point_invalid',
  /** Replay asked of a run that did not fail and was not cancelled. */
  'run_not_replayable',
]);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;

export const ErrorBodySchema = z.object({
  error: z
    .object({
      code: ErrorCodeSchema.describe('Stable, machine-readable reason; branch on this.'),
      message: z.string().describe('Human-readable explanation; may change between releases.'),
      details: z
        .unknown()
        .optional()
        .describe('Code-specific data (e.g. the invalid fields of a validation_error).'),
    })
    .describe('What went wrong.'),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
