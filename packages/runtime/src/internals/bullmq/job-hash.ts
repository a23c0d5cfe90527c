/*
 * Baton's fields in BullMQ's job hash, as of bullmq 6.7 (package.json pins ~6.7.0). Who ran a
 * job's last attempt and how many of its workers died (stall-accounting.ts) are kept in the job's
 * own hash (jobHashKeyOf), so they go wherever the job goes and vanish with it: BullMQ leaves
 * fields it does not know alone through every move (retry, delay, stall, waiting-children), and
 * keeps its stall count in the field `stc` (Job.stalledCounter). bullmq-contract.test.ts checks
 * both. Written by releases before and after this one: the names do not change.
 */

/** The stall count (BullMQ's `stc`) the last attempt started at. */
export const JOB_STALLS_FIELD = 'batonStalls';
/** The worker id that ran the last attempt. */
export const JOB_HOLDER_FIELD = 'batonHolder';
/** The deaths counted so far (lost locks whose worker was dead). */
export const JOB_DEATHS_FIELD = 'batonDeaths';
/**
 * A job attempt's holder note (JOB_STALLS_FIELD, JOB_HOLDER_FIELD) handed to the script the
 * attempt sends first, which writes it in the same round trip (run-record/lua NOTE_HOLDER).
 */
export interface HolderNote {
  /** The job's hash (jobHashKeyOf). */
  readonly key: string;
  /** The worker id running the attempt. */
  readonly holder: string;
  /** BullMQ's stall count at the attempt's start. */
  readonly stalledCounter: number;
}

/** BullMQ's own field: how often the job's lock was lost (Job.stalledCounter). */
export const BULL_STALLS_FIELD = 'stc';

/**
 * BullMQ's failedReason for a job whose lock was lost more often than maxStalledCount
 * (moveStalledJobsToWait.lua): Baton gives a job up with the same reason, and tells a crash from
 * an error by it.
 */
export const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';
