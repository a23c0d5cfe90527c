import { FlowProducer, Job, Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { JOB_PAYLOAD_VERSION, type StepJob, type ToolJob } from '@baton/protocol';
import { bullPrefix } from './redis/keys.ts';
import { createHash, randomUUID } from 'node:crypto';
import { bullTelemetryOption } from './telemetry/tracing-state.ts';
import { coalesceWrites } from './redis/write-coalescing.ts';

/**
 * The shared queues of Baton versions before per-agent routing. New workers still drain them
 * (forwarding what they cannot run to the agent's own queue), so a rolling deploy strands no job.
 */
export const STEP_QUEUE = 'steps';
export const TOOL_QUEUE = 'tools';

export type QueueKind = 'step' | 'tool';

const PLAIN_AGENT = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The agent's part of its queue names. BullMQ forbids ':' in queue names and Bull Board shows
 * them, so plain names stay readable; any other name is sanitized and suffixed with a hash of
 * the original, so two agents never share a queue ('a b' and 'a_b' differ).
 */
export function agentQueuePart(agent: string): string {
  if (PLAIN_AGENT.test(agent)) return agent;
  const readable = agent.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  return `${readable}~${createHash('sha256').update(agent).digest('hex').slice(0, 10)}`;
}

/** The step queue of one agent: only workers that registered the agent take its jobs. */
export function stepQueueName(agent: string): string {
  return `${STEP_QUEUE}.${agentQueuePart(agent)}`;
}

export function toolQueueName(agent: string): string {
  return `${TOOL_QUEUE}.${agentQueuePart(agent)}`;
}

/** Which kind of job a Baton queue holds (the legacy shared queues included); null if not ours. */
export function queueKind(name: string): QueueKind | null {
  if (name === STEP_QUEUE || name.startsWith(`${STEP_QUEUE}.`)) return 'step';
  if (name === TOOL_QUEUE || name.startsWith(`${TOOL_QUEUE}.`)) return 'tool';
  return null;
}

/** BullMQ's failedReason for a job whose worker died (or hung) more often than maxStalledCount. */
export const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/** BullMQ job ids may not contain ':'; ids from models are sanitized. */
function idPart(value: string): string {
  return value.replace(/[^A-Za-z0-9_.-]/g, '_');
}

export function toolJobId(runId: string, toolCallId: string, attempt: number): string {
  return `tool.${idPart(runId)}.${idPart(toolCallId)}.${attempt}`;
}

/** Deduplication id of "a pass over this run at this version". */
function stepDedupId(runId: string, version: number): string {
  return `step.${idPart(runId)}.v${version}`;
}

export interface BatonQueuesOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  readonly toolAttempts?: number;
  /** How long finished jobs stay visible (Bull Board) before they are removed (default 1 h). */
  readonly jobRetentionSeconds?: number;
  /** Told about errors of queues opened later (one per agent, on first use). */
  readonly onError?: (error: Error, queue: string) => void;
}

export interface StepTarget {
  readonly runId: string;
  readonly tenantId: string;
  /** The run's agent: its step goes to that agent's queue. */
  readonly agent: string;
}

/**
 * The Baton queues, with the job options every producer must use. Each agent has a queue pair
 * (`steps.<agent>`, `tools.<agent>`), opened on first use; the legacy shared pair is kept for
 * jobs that workers of an older version produced.
 */
export class BatonQueues {
  /** The legacy shared step queue (drained, never produced into). */
  readonly legacySteps: Queue;
  /** The legacy shared tool queue (drained, never produced into). */
  readonly legacyTools: Queue;
  readonly flows: FlowProducer;
  readonly toolAttempts: number;
  readonly jobRetentionSeconds: number;
  /** BullMQ's key prefix (what a job's queueQualifiedName starts with). */
  readonly bullPrefix: string;
  private readonly opts: BatonQueuesOptions;
  private readonly open = new Map<string, Queue>();

  constructor(opts: BatonQueuesOptions) {
    this.opts = opts;
    this.bullPrefix = bullPrefix(opts.prefix);
    this.legacySteps = this.queue(STEP_QUEUE);
    this.legacyTools = this.queue(TOOL_QUEUE);
    this.flows = new FlowProducer({ connection: opts.connection, prefix: this.bullPrefix });
    this.toolAttempts = opts.toolAttempts ?? 3;
    this.jobRetentionSeconds = opts.jobRetentionSeconds ?? 3600;
  }

  /** The queue with this name (opened once per process). */
  queue(name: string): Queue {
    let queue = this.open.get(name);
    if (!queue) {
      // Nobody reads BullMQ's own event stream (Baton's events are its own log): keep it short.
      queue = new Queue(name, {
        connection: this.opts.connection,
        prefix: this.bullPrefix,
        streams: { events: { maxLen: 100 } },
        // Tracing: a producer span per add, its context carried in the job's opts.
        ...bullTelemetryOption(),
      });
      const { onError } = this.opts;
      if (onError) queue.on('error', (err) => onError(err, name));
      // Jobs added in the same turn (a round's tool calls) go out in one write.
      queue.backend.client.then(coalesceWrites, () => undefined);
      this.open.set(name, queue);
    }
    return queue;
  }

  stepsFor(agent: string): Queue {
    return this.queue(stepQueueName(agent));
  }

  toolsFor(agent: string): Queue {
    return this.queue(toolQueueName(agent));
  }

  /** The step and tool queues of these agents and the legacy pair: what Bull Board and metrics show. */
  queuesOf(agents: readonly string[]): Queue[] {
    return [
      ...agents.flatMap((a) => [this.stepsFor(a), this.toolsFor(a)]),
      this.legacySteps,
      this.legacyTools,
    ];
  }

  /** The queue behind a job's queueQualifiedName ('<bull prefix>:<name>'); null if not ours. */
  fromQualifiedName(qualified: string): Queue | null {
    const head = `${this.bullPrefix}:`;
    if (!qualified.startsWith(head)) return null;
    const name = qualified.slice(head.length);
    return queueKind(name) === null ? null : this.queue(name);
  }

  private retention(): Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> {
    const age = this.jobRetentionSeconds;
    return { removeOnComplete: { age, count: 50_000 }, removeOnFail: { age, count: 50_000 } };
  }

  /**
   * Schedules a pass over the run, in its agent's queue. Producers reacting to the same commit
   * (same version) share one job while it is waiting or running: BullMQ deduplication, not a
   * fixed job id, so a job that already finished is never taken to mean that someone is still
   * handling the run. `unique` skips deduplication (wake-ups, and a job scheduling its own
   * successor at the version it was created for).
   */
  async enqueueStep(
    run: StepTarget,
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
    await this.stepsFor(run.agent).add(reason, data, {
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
   * before it schedules a pass of its own. The legacy queue counts while old producers may
   * still put the run's jobs there.
   */
  async liveStepJob(runId: string, agent: string, version: number): Promise<string | null> {
    for (const queue of [this.stepsFor(agent), this.legacySteps]) {
      const jobId = await queue.getDeduplicationJobId(stepDedupId(runId, version));
      if (!jobId) continue;
      const job = await Job.fromId(queue, jobId);
      if (job && isLive(await job.getState())) return jobId;
    }
    return null;
  }

  /** The queue named by a '<queue>:<jobId>' entry (lease drivers, failed-job lists). */
  private entry(entry: string): { queue: Queue; jobId: string } | null {
    const at = entry.indexOf(':');
    if (at < 0) return null;
    const name = entry.slice(0, at);
    if (queueKind(name) === null) return null;
    return { queue: this.queue(name), jobId: entry.slice(at + 1) };
  }

  /** Whether the job named '<queue>:<jobId>' exists and has not finished. */
  async isLive(entry: string): Promise<boolean> {
    const found = this.entry(entry);
    if (!found) return false;
    const job = await Job.fromId(found.queue, found.jobId);
    return job !== undefined && isLive(await job.getState());
  }

  /**
   * The job of this tool-call attempt: in the agent's queue, else one an older version put in
   * the legacy queue (a job forwarded from there always has a twin in the agent's queue, which
   * is found first).
   */
  async toolJob(
    agent: string,
    runId: string,
    toolCallId: string,
    attempt: number,
  ): Promise<Job | undefined> {
    const jobId = toolJobId(runId, toolCallId, attempt);
    return (
      (await Job.fromId(this.toolsFor(agent), jobId)) ?? (await Job.fromId(this.legacyTools, jobId))
    );
  }

  /**
   * The BullMQ keys the jobs of these tool-call attempts would have, in the agent's queue and
   * the legacy one. They share BullMQ's prefix hash tag, so one multi-key EXISTS over them tells
   * whether a fresh round has any job yet, on a cluster too.
   */
  toolJobKeys(
    agent: string,
    runId: string,
    calls: readonly { readonly toolCallId: string; readonly attempt: number }[],
  ): string[] {
    const ids = calls.map((c) => toolJobId(runId, c.toolCallId, c.attempt));
    return [this.toolsFor(agent), this.legacyTools].flatMap((q) => ids.map((id) => q.toKey(id)));
  }

  /** Whether the tool job of this call attempt exists and has not finished. */
  async liveToolJob(
    agent: string,
    runId: string,
    toolCallId: string,
    attempt: number,
  ): Promise<boolean> {
    const job = await this.toolJob(agent, runId, toolCallId, attempt);
    return job !== undefined && isLive(await job.getState());
  }

  /**
   * Adds one tool call to its agent's tool queue, as a child of a step job when `parent` is
   * given (so the step waits for it: a BullMQ flow, which may span queues).
   */
  async addToolChild(
    job: ToolJob,
    agent: string,
    parent?: { id: string; queue: string },
  ): Promise<string> {
    const jobId = toolJobId(job.runId, job.toolCallId, job.attempt);
    await this.toolsFor(agent).add(`tool:${job.toolCallId}`, job, {
      jobId,
      ...(parent ? { parent } : {}),
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
      const found = this.entry(entry);
      if (!found) continue;
      const job = await Job.fromId(found.queue, found.jobId);
      if (job && (await job.getState()) === 'failed') await job.remove().catch(() => undefined);
    }
  }

  /**
   * Drops finished jobs past their retention even when no new job finishes to trigger it, in
   * the queues of these agents, the legacy pair and `others` (schedules, webhooks). BullMQ's own
   * removeOnComplete/removeOnFail age runs only when a job of the queue finishes, and then drops
   * a bounded number, so after a burst nothing else brings Redis back to its base: each queue
   * and state is cleaned `perCall` jobs per Lua call (short, so Redis keeps serving between
   * calls) until a call finds fewer, up to `maxPerQueue` per queue and state.
   */
  async cleanFinished(
    agents: readonly string[],
    opts: {
      readonly others?: readonly string[];
      readonly perCall?: number;
      readonly maxPerQueue?: number;
    } = {},
  ): Promise<number> {
    const grace = this.jobRetentionSeconds * 1000;
    const perCall = opts.perCall ?? 1000;
    const maxPerQueue = opts.maxPerQueue ?? 200_000;
    const queues = [...this.queuesOf(agents), ...(opts.others ?? []).map((n) => this.queue(n))];
    let removed = 0;
    for (const queue of queues)
      for (const state of ['completed', 'failed'] as const)
        for (let done = 0; done < maxPerQueue;) {
          const n = (await queue.clean(grace, perCall, state)).length;
          done += n;
          removed += n;
          if (n < perCall) break;
        }
    return removed;
  }

  async close(): Promise<void> {
    await Promise.all([...[...this.open.values()].map((q) => q.close()), this.flows.close()]);
  }
}

function isLive(state: string): boolean {
  return state !== 'completed' && state !== 'failed' && state !== 'unknown';
}
