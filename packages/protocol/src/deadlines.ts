import { z } from 'zod';
import { JsonValueSchema } from './json.ts';

/** The longest timeout, extension or sleep Baton accepts: a year (a waiting run lives that long). */
export const MAX_DURATION_MS = 366 * 24 * 3_600_000;

// ISO 8601 durations as people write them: P1D, PT4H, PT30M, PT1.5S, P1DT12H, P2W (no months or
// years: their length depends on the calendar).
const ISO_DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/**
 * Milliseconds of a duration given as a number of ms or an ISO 8601 string (`PT4H`, `P1DT12H`);
 * null when the string is not one (months and years are refused: their length varies).
 */
export function durationMs(value: number | string): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : null;
  const m = ISO_DURATION.exec(value);
  if (!m || value === 'P' || value.endsWith('T')) return null;
  const [, w, d, h, min, s] = m;
  const n = (x: string | undefined): number => (x === undefined ? 0 : Number(x));
  return Math.round(((((n(w) * 7 + n(d)) * 24 + n(h)) * 60 + n(min)) * 60 + n(s)) * 1000);
}

export const DurationSchema = z
  .union([z.number().int().positive(), z.string().min(2).max(40)])
  .refine(
    (v) => {
      const ms = durationMs(v);
      return ms !== null && ms > 0 && ms <= MAX_DURATION_MS;
    },
    {
      message:
        'a duration is a number of milliseconds or an ISO 8601 duration such as "PT4H" or "P1DT12H" (no months or years), above 0 and at most a year',
    },
  )
  .describe('Milliseconds, or an ISO 8601 duration such as "PT4H" (no months or years).');
export type Duration = z.infer<typeof DurationSchema>;

const reason = z.string().max(2000);

/** What happens to a waiting call when its deadline passes, without any decision. */
export const FinalDeadlineOutcomeSchema = z.discriminatedUnion('action', [
  /** The call is denied (a cancel decision): the model sees it cancelled with this reason. */
  z.strictObject({ action: z.literal('deny'), reason: reason.optional() }),
  /** The call resumes with this payload, as a human's resume decision would. */
  z.strictObject({ action: z.literal('resume'), payload: JsonValueSchema.optional() }),
  /** The whole run is cancelled. */
  z.strictObject({ action: z.literal('cancel'), reason: reason.optional() }),
]);
export type FinalDeadlineOutcome = z.infer<typeof FinalDeadlineOutcomeSchema>;

/**
 * A deadline's outcome: a final one, or `escalate`: the first expiry fires the run's webhooks
 * (`tool_call.deadline_escalated`) and extends the deadline once by `extendBy`; the second
 * applies `then` (default: deny).
 */
export const DeadlineOutcomeSchema = z.discriminatedUnion('action', [
  ...FinalDeadlineOutcomeSchema.options,
  z.strictObject({
    action: z.literal('escalate'),
    extendBy: DurationSchema,
    reason: reason.optional(),
    then: FinalDeadlineOutcomeSchema.optional(),
  }),
]);
export type DeadlineOutcome = z.infer<typeof DeadlineOutcomeSchema>;

/** A deadline as tools, agents and runs declare it: how long a call may wait, and then what. */
export const DeadlinePolicySchema = z.strictObject({
  timeout: DurationSchema,
  outcome: DeadlineOutcomeSchema,
});
export type DeadlinePolicy = z.infer<typeof DeadlinePolicySchema>;

/**
 * A suspended call's deadline as its ticket carries it. A tool may return a ticket with
 * `timeout` (or `at`); the engine resolves it to `at` when the call suspends, so what is stored
 * and shown always has `at`. `escalated`: the deadline was extended once already.
 */
export const TicketDeadlineSchema = z.object({
  /** Epoch ms the deadline passes. */
  at: z.number().optional(),
  timeout: DurationSchema.optional(),
  outcome: DeadlineOutcomeSchema,
  escalated: z.boolean().optional(),
});
export type TicketDeadline = z.infer<typeof TicketDeadlineSchema>;

/** decisionId of the decision a deadline takes (one per call and deadline instant). */
export function deadlineDecisionId(toolCallId: string, at: number): string {
  return `deadline:${toolCallId}:${String(at)}`;
}
