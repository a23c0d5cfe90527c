import { z } from 'zod';

/**
 * Run priorities and fairness (docs/fairness.md): a run's level decides which work workers take
 * first; its fairness key shares the workers among the callers of one level.
 */

/** 1 is dispatched first, 5 last (as Temporal's priority keys). */
const HIGHEST_PRIORITY = 1;
const LOWEST_PRIORITY = 5;
/** The level of a run that names none. */
export const DEFAULT_PRIORITY = 3;

export const RunPrioritySchema = z
  .number()
  .int()
  .min(HIGHEST_PRIORITY, 'priority must be a whole number from 1 (highest) to 5 (lowest)')
  .max(LOWEST_PRIORITY, 'priority must be a whole number from 1 (highest) to 5 (lowest)');

/** Letters, digits, '.', '_', ':', '-' (a tenant's own end-user id, a plan name…). */
export const FairnessKeySchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'may only contain letters, digits, ".", "_", ":" and "-"');

/** Why a run that has work holds no job yet (its place is kept, it is never dropped). */
export const QueuedReasonSchema = z.enum([
  /** Its fairness key has as many runs in progress as its window (weight × base) allows. */
  'fairness_key_limit',
  /** Its tenant has as many runs in progress as BATON_FAIRNESS allows. */
  'tenant_limit',
  /** Runs of its key ahead of it (higher priority, or earlier) go first. */
  'behind_backlog',
  /**
   * No live worker serves the agent version the run is pinned to: it holds no job and no slot,
   * and continues when a worker of that version starts (never failed for it).
   */
  'version_unavailable',
]);
export type QueuedReason = z.infer<typeof QueuedReasonSchema>;

/** GET /v1/runs/:id of a run waiting for a slot of its tenant or fairness key. */
export const QueuedInfoSchema = z.object({
  reason: QueuedReasonSchema,
  /** 1 = next of its fairness key to start. */
  position: z.number().int().min(1),
  /** Runs of its fairness key waiting, itself included. */
  backlog: z.number().int().min(1),
  /** Runs of its fairness key in progress now, and how many it may have (absent: no window). */
  inProgress: z.number().int().nonnegative(),
  limit: z.number().int().min(1).optional(),
});
export type QueuedInfo = z.infer<typeof QueuedInfoSchema>;
