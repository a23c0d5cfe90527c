import { FlowProducer, Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { JOB_PAYLOAD_VERSION, type StepJob, type ToolJob } from '@baton/protocol';
import { randomUUID } from 'node:crypto';

export const STEP_QUEUE = 'steps';
export const TOOL_QUEUE = 'tools';

/** BullMQ keys share one hash tag so the queues work on Redis Cluster. */
export function bullPrefix(prefix: string): string {
  return `{${prefix}-bull}`;
}

/** BullMQ job ids may not contain ':'; ids from models are sanitized. */
function idPart(value: string): string {
  return value.replace(/[^A-Za-z0-9_.-]/g, '_');
}

export function stepJobId(runId: string, version: number): string {
  return `step.${idPart(runId)}.v${version}`;
}

export function toolJobId(runId: string, toolCallId: string, attempt: number): string {
  return `tool.${idPart(runId)}.${idPart(toolCallId)}.${attempt}`;
}

export interface BatonQueuesOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  readonly toolAttempts?: number;
}

/** The Baton queues, with the job options every producer must use. */
export class BatonQueues {
  readonly steps: Queue;
  readonly tools: Queue;
  readonly flows: FlowProducer;
  readonly toolAttempts: number;

  constructor(opts: BatonQueuesOptions) {
    const prefix = bullPrefix(opts.prefix);
    this.steps = new Queue(STEP_QUEUE, { connection: opts.connection, prefix });
    this.tools = new Queue(TOOL_QUEUE, { connection: opts.connection, prefix });
    this.flows = new FlowProducer({ connection: opts.connection, prefix });
    this.toolAttempts = opts.toolAttempts ?? 3;
  }

  stepOptions(jobId: string): JobsOptions {
    return {
      jobId,
      attempts: 8,
      backoff: { type: 'exponential', delay: 100 },
      removeOnComplete: { age: 3600, count: 50_000 },
      removeOnFail: { age: 7 * 86_400 },
    };
  }

  /**
   * Schedules a pass over the run. Ids derive from the checkpoint version so that two producers
   * reacting to the same commit enqueue one job; `unique` is for wake-ups that must not dedupe.
   */
  async enqueueStep(
    run: { runId: string; tenantId: string },
    reason: StepJob['reason'],
    version: number,
    unique = false,
  ): Promise<string> {
    const jobId = unique
      ? `wake.${idPart(run.runId)}.${randomUUID()}`
      : stepJobId(run.runId, version);
    const data: StepJob = {
      v: JOB_PAYLOAD_VERSION,
      kind: 'step',
      runId: run.runId,
      tenantId: run.tenantId,
      reason,
      expectedVersion: version,
    };
    await this.steps.add(reason, data, this.stepOptions(jobId));
    return jobId;
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
      removeOnComplete: { age: 3600, count: 50_000 },
      removeOnFail: { age: 7 * 86_400 },
    });
    return jobId;
  }

  async close(): Promise<void> {
    await Promise.all([this.steps.close(), this.tools.close(), this.flows.close()]);
  }
}
