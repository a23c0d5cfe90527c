import { z } from 'zod';
import { InputMessageSchema } from './messages.ts';
import { IdSchema, MAX_INPUT_MESSAGES, RunOptionsSchema } from './run-request.ts';

/**
 * Scheduled runs: a schedule creates a run of its agent at each firing of a cron expression (in a
 * time zone) or of a fixed interval. Syntax is checked here; whether a cron expression can ever
 * fire is checked by the runtime with the parser the queue uses (cron-parser), so what is accepted
 * is exactly what fires.
 */

/** Shortest interval: one firing per second, the resolution of the cron seconds field too. */
const MIN_SCHEDULE_EVERY_MS = 1_000;
const MAX_SCHEDULE_EVERY_MS = 366 * 86_400_000;
/** How many firings GET /v1/schedules/:id reports, newest first. */
export const SCHEDULE_RECENT_FIRINGS = 20;

const CRON_FIELD = /^[A-Za-z0-9*?,/#LW-]+$/;

/** 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first). */
export const CronExpressionSchema = z
  .string()
  .max(256)
  .superRefine((value, ctx) => {
    const fields = value.trim().split(/\s+/).filter(Boolean);
    if (fields.length !== 5 && fields.length !== 6) {
      ctx.addIssue({
        code: 'custom',
        message: `has ${fields.length} field(s); use 5 (minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5") or 6 with seconds first (e.g. "*/10 * * * * *")`,
      });
      return;
    }
    const bad = fields.find((f) => !CRON_FIELD.test(f));
    if (bad !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: `field "${bad}" has characters a cron field cannot have (digits, names, * ? , / - L W # only)`,
      });
  });

/** Whether the runtime knows this IANA zone (the one cron-parser and the queue will use). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const TimeZoneSchema = z
  .string()
  .min(1)
  .max(64)
  .refine(isTimeZone, { message: 'is not an IANA time zone; use e.g. "UTC" or "Europe/Paris"' });

/** An instant: ISO 8601 with an offset ("2030-01-01T09:00:00Z") or epoch milliseconds. */
export const InstantSchema = z.union([
  z.iso.datetime({ offset: true }),
  z.number().int().min(0).max(8_640_000_000_000_000),
]);
export type Instant = z.infer<typeof InstantSchema>;

/** Epoch milliseconds of a validated instant. */
export function instantMs(value: Instant): number {
  return typeof value === 'number' ? value : Date.parse(value);
}

export const CreateScheduleRequestSchema = z
  .strictObject({
    /** A label for people; not unique. */
    name: z.string().min(1).max(128).optional(),
    agent: z.string().min(1).max(128),
    /** Every firing runs on this thread, following options.multitask when a run is still active. */
    threadId: IdSchema.optional(),
    input: z.strictObject({
      messages: z.array(InputMessageSchema).min(1).max(MAX_INPUT_MESSAGES),
    }),
    options: RunOptionsSchema.optional(),
    cron: CronExpressionSchema.optional(),
    /** Time zone of `cron` (default UTC). */
    timezone: TimeZoneSchema.optional(),
    everyMs: z.number().int().min(MIN_SCHEDULE_EVERY_MS).max(MAX_SCHEDULE_EVERY_MS).optional(),
    /** No firing before this instant. */
    startAt: InstantSchema.optional(),
    /** No firing after this instant; the schedule is then completed. */
    endAt: InstantSchema.optional(),
    /** At most this many firings (whatever their outcome); the schedule is then completed. */
    limit: z.number().int().min(1).max(1_000_000).optional(),
  })
  .superRefine((body, ctx) => {
    const hasCron = body.cron !== undefined;
    const hasEvery = body.everyMs !== undefined;
    if (hasCron === hasEvery)
      ctx.addIssue({
        code: 'custom',
        path: [hasCron ? 'everyMs' : 'cron'],
        message: hasCron
          ? 'give either cron or everyMs, not both'
          : 'give either cron (e.g. "0 9 * * 1-5") or everyMs (at least 1000)',
      });
    if (body.timezone !== undefined && !hasCron)
      ctx.addIssue({
        code: 'custom',
        path: ['timezone'],
        message: 'timezone applies to cron only; remove it or give a cron expression',
      });
    if (
      body.startAt !== undefined &&
      body.endAt !== undefined &&
      instantMs(body.endAt) <= instantMs(body.startAt)
    )
      ctx.addIssue({ code: 'custom', path: ['endAt'], message: 'must be after startAt' });
  });
export type CreateScheduleRequest = z.infer<typeof CreateScheduleRequestSchema>;

export const ScheduleStateSchema = z.enum(['active', 'paused', 'completed']);
export type ScheduleState = z.infer<typeof ScheduleStateSchema>;

/**
 * What one firing did: a run created (or queued behind the thread's active run), or not
 * (rejected by the thread, failed, or skipped because the tenant was over its run limits).
 */
export const FiringOutcomeSchema = z.enum(['created', 'queued', 'rejected', 'failed', 'skipped']);
export type FiringOutcome = z.infer<typeof FiringOutcomeSchema>;

export const ScheduleFiringSchema = z.object({
  /** When the firing was due (epoch ms); one firing per schedule and instant. */
  scheduledFor: z.number(),
  /** When a worker handled it. */
  firedAt: z.number(),
  outcome: FiringOutcomeSchema,
  /** The run it created (created, queued). */
  runId: z.string().optional(),
  /** Why no run was created (rejected: thread_busy; failed: e.g. unknown_agent; skipped: rate_limited). */
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type ScheduleFiring = z.infer<typeof ScheduleFiringSchema>;

export const ScheduleLinksSchema = z.object({
  self: z.string(),
  runs: z.string(),
  pause: z.string(),
  resume: z.string(),
});

export const ScheduleSchema = z.object({
  scheduleId: z.string(),
  name: z.string().optional(),
  agent: z.string(),
  threadId: z.string().optional(),
  input: z.object({ messages: z.array(InputMessageSchema) }),
  options: RunOptionsSchema.optional(),
  cron: z.string().optional(),
  timezone: z.string().optional(),
  everyMs: z.number().optional(),
  startAt: z.number().optional(),
  endAt: z.number().optional(),
  limit: z.number().optional(),
  state: ScheduleStateSchema,
  /** Why a completed schedule completed. */
  completedReason: z.enum(['limit', 'end']).optional(),
  /** Bumped by every change (compare-and-set). */
  version: z.number(),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** When the next firing is due (epoch ms); null while paused or completed. */
  nextFireAt: z.number().nullable(),
  /** Firings so far, whatever their outcome. */
  firings: z.number(),
  lastFiredAt: z.number().nullable(),
  links: ScheduleLinksSchema,
});
export type Schedule = z.infer<typeof ScheduleSchema>;

export const ScheduleDetailSchema = ScheduleSchema.extend({
  /** The latest firings, newest first (at most SCHEDULE_RECENT_FIRINGS). */
  recentFirings: z.array(ScheduleFiringSchema),
});
export type ScheduleDetail = z.infer<typeof ScheduleDetailSchema>;

export const SchedulePageSchema = z.object({
  schedules: z.array(ScheduleSchema),
  nextCursor: z.string().nullable(),
});
export type SchedulePage = z.infer<typeof SchedulePageSchema>;
