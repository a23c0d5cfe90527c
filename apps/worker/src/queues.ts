import { FlowProducer, Job, Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { JOB_PAYLOAD_VERSION, type StepJob, type ToolJob } from '@baton/protocol';
import { randomUUID } from 'node:crypto';

export const STEP_QUEUE = 'steps';
export const TOOL_QUEUE = 'tools';

/** BullMQ's failedReason for a job whose worker died (or hung) more often than maxStalledCount. */
export const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/** BullMQ keys share one hash tag so the queues work on Redis Cluster. */
export function bullPrefix(prefix: string): string {
  return `{${prefix}-bull}`;
}

/** BullMQ job ids may not contain ':'; ids from models are sanitized. */
function idPart(value: string): string {
  return value.replace(/[^A-Za-z0-9_.-]/g, '_');
}

export function toolJobId(runId: string, toolCallId: string, attempt: number): string {
  return `tool.${idPart(runId)}.${idPart(toolCallId)}.${attempt}`;
}

/** Deduplication id of "a pass over this run at this version". */
export function stepDedupId(runId: string, version: number): string {
  return `step.${idPart(runId)}.v${version}`;
}

export interface BatonQueuesOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  readonly toolAttempts?: number;
  /** How long finished jobs stay visible (Bull Board) before they are removed (default 1 h). */
  readonly jobRetentionSeconds?: number;
}

/** The Baton queues, with the job options every producer must use. */
export class BatonQueues {
  readonly steps: Queue;
  readonly tools: Queue;
  readonly flows: FlowProducer;
  readonly toolAttempts: number;
  readonly jobRetentionSeconds: number;

  constructor(opts: BatonQueuesOptions) {
    const prefix = bullPrefix(opts.prefix);
    // Nobody reads BullMQ's own event stream (Baton's events are its own log): keep it short.
    const streams = { events: { maxLen: 100 } };
    this.steps = new Queue(STEP_QUEUE, { connection: opts.connection, prefix, streams });
    this.tools = new Queue(TOOL_QUEUE, { connection: opts.connection, prefix, streams });
    this.flows = new FlowProducer({ connection: opts.connection, prefix });
    this.toolAttempts = opts.toolAttempts ?? 3;
    this.jobRetentionSeconds = opts.jobRetentionSeconds ?? 3600;
  }

  private retention(): Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> {
    const age = this.jobRetentionSeconds;
    return { removeOnComplete: { age, count: 50_000 }, removeOnFail: { age, count: 50_000 } };
  }

  /**
   * Schedules a pass over the run. Producers reacting to the same commit (same version) share
   * one job while it is waiting or running: BullMQ deduplication, not a fixed job id, so a job
   * that already finished is never taken to mean that someone is still handling the run.
   * `unique` skips deduplication (wake-ups, and a job scheduling its own successor at the version
   * it was created for).
   */
  async enqueueStep(
    run: { runId: string; tenantId: string },
    reason: StepJob['reason'],
    version: number,
    unique = false,
  ): Promise<string> {
    const dedupId = stepDedupId(run.runId, version);
    const jobId = `${unique ? 'wake' : dedupId}.${randomUUID().slice(0, 8)}`;
    const data: StepJob = {
      v: JOB_PAYLOAD_VERSION,
      kind: 'step',
      runId: run.runId,
      tenantId: run.tenantId,
      reason,
      expectedVersion: version,
    };
    await this.steps.add(reason, data, {
      jobId,
      attempts: 8,
      backoff: { type: 'exponential', delay: 100 },
      ...this.retention(),
      ...(unique ? {} : { deduplication: { id: dedupId } }),
    });
    return jobId;
  }

  /**
   * The live (not finished) step job for the run's `version`, if any: what the reconciler asks
   * before it schedules a pass of its own.
   */
  async liveStepJob(runId: string, version: number): Promise<string | null> {
    const jobId = await this.steps.getDeduplicationJobId(stepDedupId(runId, version));
    if (!jobId) return null;
    const job = await Job.fromId(this.steps, jobId);
    if (!job) return null;
    return isLive(await job.getState()) ? jobId : null;
  }

  /** Whether the job named '<queue>:<jobId>' exists and has not finished. */
  async isLive(entry: string): Promise<boolean> {
    const at = entry.indexOf(':');
    if (at < 0) return false;
    const queue = entry.slice(0, at) === TOOL_QUEUE ? this.tools : this.steps;
    const job = await Job.fromId(queue, entry.slice(at + 1));
    return job !== undefined && isLive(await job.getState());
  }

  /** Whether the tool job of this call attempt exists and has not finished. */
  async liveToolJob(runId: string, toolCallId: string, attempt: number): Promise<boolean> {
    const job = await Job.fromId(this.tools, toolJobId(runId, toolCallId, attempt));
    return job !== undefined && isLive(await job.getState());
  }

  /** Adds one tool call as a child of a step job, so the step waits for it (BullMQ flow). */
  async addToolChild(job: ToolJob, parent: { id: string; queue: string }): Promise<string> {
    const jobId = toolJobId(job.runId, job.toolCallId, job.attempt);
    await this.tools.add(`tool:${job.toolCallId}`, job, {
      jobId,
      parent,
      attempts: this.toolAttempts,
      backoff: { type: 'exponential', delay: 200 },
      // A tool that keeps crashing must not leave its step in waiting-children forever: the
      // parent goes on and records the failure as the call's result.
      ignoreDependencyOnFailure: true,
      ...this.retention(),
    });
    return jobId;
  }

  /** Removes failed jobs named '<queue>:<jobId>' (a finished run leaves none behind). */
  async removeFailedJobs(entries: readonly string[]): Promise<void> {
    for (const entry of entries) {
      const at = entry.indexOf(':');
      if (at < 0) continue;
      const queue = entry.slice(0, at) === TOOL_QUEUE ? this.tools : this.steps;
      const job = await Job.fromId(queue, entry.slice(at + 1));
      if (job && (await job.getState()) === 'failed') await job.remove().catch(() => undefined);
    }
  }

  /** Drops finished jobs past their retention even when no new job finishes to trigger it. */
  async cleanFinished(limit = 1000): Promise<number> {
    const grace = this.jobRetentionSeconds * 1000;
    let removed = 0;
    for (const queue of [this.steps, this.tools])
      for (const state of ['completed', 'failed'] as const)
        removed += (await queue.clean(grace, limit, state)).length;
    return removed;
  }

  async close(): Promise<void> {
    await Promise.all([this.steps.close(), this.tools.close(), this.flows.close()]);
  }
}

function isLive(state: string): boolean {
  return state !== 'completed' && state !== 'failed' && state !== 'unknown';
}
