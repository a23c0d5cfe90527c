import { FlowProducer, Job, Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { DEFAULT_PRIORITY, JOB_PAYLOAD_VERSION, type StepJob, type ToolJob } from '@baton/protocol';
import { bullPrefix, shardBullPrefix, type BatonKeys } from './redis/keys.ts';
import { createHash, randomUUID } from 'node:crypto';
import { bullTelemetryOption } from './telemetry/tracing-state.ts';
import { coalesceBullWrites } from './internals/bullmq/clients.ts';
import { jobHashKey } from './internals/bullmq/queue-keys.ts';
import type { RedisClient } from './redis/scripts.ts';
import { parseShardQueueName, shardOf, shardQueueName, shardQueueNames } from './queue-shards.ts';
import { TaskQueueDirectory } from './task-queues.ts';
import { AgentVersions } from './agent-versions.ts';

/**
 * The shared queues of Baton versions before per-agent routing. New workers still drain them
 * (forwarding what they cannot run to the run's queue), so a rolling deploy strands no job.
 */
export const STEP_QUEUE = 'steps';
export const TOOL_QUEUE = 'tools';

const PLAIN_AGENT = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The agent's part of the per-agent queue names of the previous layout. Any name other than a
 * plain one is sanitized and suffixed with a hash of the original, so two agents never share a
 * queue ('a b' and 'a_b' differ).
 */
export function agentQueuePart(agent: string): string {
  if (PLAIN_AGENT.test(agent)) return agent;
  const readable = agent.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  return `${readable}~${createHash('sha256').update(agent).digest('hex').slice(0, 10)}`;
}

/** The step queue one agent had before queue shards (drained while it holds jobs). */
export function stepQueueName(agent: string): string {
  return `${STEP_QUEUE}.${agentQueuePart(agent)}`;
}

/** The tool queue one agent had before queue shards (drained while it holds jobs). */
export function toolQueueName(agent: string): string {
  return `${TOOL_QUEUE}.${agentQueuePart(agent)}`;
}

/**
 * Which layout a Baton queue belongs to: a shard queue (steps and tools of a task queue's runs),
 * or a step or tool queue of the earlier layouts (per agent, or the legacy shared pair); null if
 * the name is not one of ours.
 */
export function queueLayout(name: string): 'shard' | 'step' | 'tool' | null {
  if (parseShardQueueName(name)) return 'shard';
  if (name === STEP_QUEUE || name.startsWith(`${STEP_QUEUE}.`)) return 'step';
  if (name === TOOL_QUEUE || name.startsWith(`${TOOL_QUEUE}.`)) return 'tool';
  return null;
}

/**
 * The queue a step job's tool children go to: BullMQ flows need a parent and its children in
 * one slot, so it is derived from the parent's queue, never from the run. A shard queue holds
 * both; the earlier layouts paired `steps…` with `tools…` under one hash tag.
 */
export function childQueueOf(stepQueue: string): string {
  if (queueLayout(stepQueue) !== 'step') return stepQueue;
  return `${TOOL_QUEUE}${stepQueue.slice(STEP_QUEUE.length)}`;
}

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

/** What enqueueStep returns for a run parked until a worker of its version starts (no job). */
const PARKED = 'parked';

export interface BatonQueuesOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  /** The main client: the task-queue lookup (agent adverts) and the registry of queue names. */
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  /** BATON_QUEUE_SHARDS: the queues per task queue (default 1). */
  readonly shards?: number;
  readonly toolAttempts?: number;
  /** How long finished jobs stay visible (Bull Board) before they are removed (default 1 h). */
  readonly jobRetentionSeconds?: number;
  /** Told about errors of queues opened later (one per shard, on first use). */
  readonly onError?: (error: Error, queue: string) => void;
}

export interface StepTarget {
  readonly runId: string;
  readonly tenantId: string;
  /** The run's agent: its task queue (where its workers are) picks the queue. */
  readonly agent: string;
  /** The version the run is pinned to: its workers' task queue (absent: by agent, as before). */
  readonly agentVersion?: string | undefined;
  /** 1 (first) … 5 (last); absent: DEFAULT_PRIORITY. Its BullMQ priority (docs/fairness.md). */
  readonly priority?: number | undefined;
}

/**
 * A run's level as BullMQ's priority: every level goes through BullMQ's prioritized set (a job
 * without a priority would be taken before all of them), one priority per level, so within a
 * level jobs stay first in, first out.
 */
function bullPriority(priority: number | undefined): number {
  return priority ?? DEFAULT_PRIORITY;
}

/**
 * The Baton queues, with the job options every producer must use. A run's jobs (its steps and
 * their tool children) go to one shard queue of its agent's task queue: `shardOf(runId, K)`.
 * The queues of earlier layouts (per agent, the legacy shared pair, shards of another K) are
 * only drained by workers while they hold jobs (see apps/worker/src/queue-drain.ts).
 */
export class BatonQueues {
  readonly flows: FlowProducer;
  readonly toolAttempts: number;
  readonly jobRetentionSeconds: number;
  /** BATON_QUEUE_SHARDS. */
  readonly shards: number;
  /** Which task queue serves an agent (workers' adverts, cached). */
  readonly taskQueues: TaskQueueDirectory;
  /** Agent versions: where a version's jobs go, runs parked without a worker of theirs. */
  readonly versions: AgentVersions;
  /** BullMQ's key prefix of the earlier layouts, schedules and webhooks (one hash tag). */
  readonly bullPrefix: string;
  /** BullMQ's key prefix of shard queues: no hash tag of its own, the queue name carries it. */
  readonly shardPrefix: string;
  private readonly opts: BatonQueuesOptions;
  private readonly open = new Map<string, Queue>();
  /** Queue names this process has written to the registry (once per process and queue). */
  private readonly noted = new Set<string>();

  constructor(opts: BatonQueuesOptions) {
    this.opts = opts;
    this.bullPrefix = bullPrefix(opts.prefix);
    this.shardPrefix = shardBullPrefix(opts.prefix);
    this.shards = opts.shards ?? 1;
    this.taskQueues = new TaskQueueDirectory(opts.redis, opts.keys);
    this.versions = new AgentVersions(opts.redis, opts.keys);
    // One FlowProducer for every shard: it takes the queue (and prefix) per call.
    this.flows = new FlowProducer({ connection: opts.connection, prefix: this.shardPrefix });
    this.toolAttempts = opts.toolAttempts ?? 3;
    this.jobRetentionSeconds = opts.jobRetentionSeconds ?? 3600;
  }

  /** The legacy shared step queue (drained, never produced into). */
  get legacySteps(): Queue {
    return this.queue(STEP_QUEUE);
  }

  /** The legacy shared tool queue (drained, never produced into). */
  get legacyTools(): Queue {
    return this.queue(TOOL_QUEUE);
  }

  /** The BullMQ prefix a queue of this name lives under. */
  prefixOf(name: string): string {
    return queueLayout(name) === 'shard' ? this.shardPrefix : this.bullPrefix;
  }

  /** The queue with this name (opened once per process; all share the one BullMQ connection). */
  queue(name: string): Queue {
    let queue = this.open.get(name);
    if (!queue) {
      // Nobody reads BullMQ's own event stream (Baton's events are its own log): keep it short.
      queue = new Queue(name, {
        connection: this.opts.connection,
        prefix: this.prefixOf(name),
        streams: { events: { maxLen: 100 } },
        // Tracing: a producer span per add, its context carried in the job's opts.
        ...bullTelemetryOption(),
      });
      const { onError } = this.opts;
      if (onError) queue.on('error', (err) => onError(err, name));
      // Jobs added in the same turn (a round's tool calls) go out in one write.
      coalesceBullWrites(queue);
      this.open.set(name, queue);
    }
    return queue;
  }

  /** The K shard queues of a task queue (K = BATON_QUEUE_SHARDS unless given). */
  shardQueues(taskQueue: string, shards = this.shards): Queue[] {
    return shardQueueNames(taskQueue, shards).map((n) => this.queue(n));
  }

  /** The queue of a run's step jobs (and their tool children): its agent's pool, its shard. */
  async runQueue(run: Pick<StepTarget, 'runId' | 'agent' | 'agentVersion'>): Promise<Queue> {
    const route =
      run.agentVersion === undefined
        ? null
        : await this.versions.route(run.agent, run.agentVersion);
    const taskQueue = route?.taskQueue ?? (await this.taskQueues.of(run.agent));
    const name = shardQueueName(taskQueue, shardOf(run.runId, this.shards), this.shards);
    await this.note(name);
    return this.queue(name);
  }

  /**
   * Writes the queue's name to the registry, once per process: workers drain a queue of
   * another K (or a pool that went away) only while it holds jobs, and find it here.
   */
  async note(name: string): Promise<void> {
    if (this.noted.has(name)) return;
    await this.opts.redis.sadd(this.opts.keys.queueRegistry, name);
    this.noted.add(name);
  }

  /** Every queue name producers of this version used (the registry). */
  async registered(): Promise<string[]> {
    return this.opts.redis.smembers(this.opts.keys.queueRegistry);
  }

  /**
   * Every queue there is to look at (Bull Board, metrics, the reconciler's sweeps): the
   * registered ones, the current shards of the agents' task queues, the legacy pair.
   */
  async listQueues(agents: readonly string[]): Promise<Queue[]> {
    const names = new Set(await this.registered());
    for (const agent of agents)
      for (const n of shardQueueNames(await this.taskQueues.of(agent), this.shards)) names.add(n);
    if (agents.length === 0) for (const n of shardQueueNames('default', this.shards)) names.add(n);
    names.add(STEP_QUEUE);
    names.add(TOOL_QUEUE);
    return [...names].sort().map((n) => this.queue(n));
  }

  /** The queue behind a job's queueQualifiedName ('<bull prefix>:<name>'); null if not ours. */
  fromQualifiedName(qualified: string): Queue | null {
    for (const head of [`${this.shardPrefix}:`, `${this.bullPrefix}:`]) {
      if (!qualified.startsWith(head)) continue;
      const name = qualified.slice(head.length);
      if (queueLayout(name) === null || this.prefixOf(name) !== head.slice(0, -1)) return null;
      return this.queue(name);
    }
    return null;
  }

  private retention(): Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> {
    const age = this.jobRetentionSeconds;
    return { removeOnComplete: { age, count: 50_000 }, removeOnFail: { age, count: 50_000 } };
  }

  /**
   * Schedules a pass over the run, in its queue. Producers reacting to the same commit (same
   * version) share one job while it is waiting or running: BullMQ deduplication, not a fixed job
   * id, so a job that already finished is never taken to mean that someone is still handling the
   * run. `unique` skips deduplication (wake-ups, and a job scheduling its own successor at the
   * version it was created for). `into` puts it in that queue instead (moving a job to the
   * agent's current task queue).
   */
  async enqueueStep(
    run: StepTarget,
    reason: StepJob['reason'],
    version: number,
    unique = false,
    into?: Queue,
  ): Promise<string> {
    let target = run;
    if (run.agentVersion !== undefined && into === undefined) {
      const routed = await this.versionTarget(run);
      if (routed === null) {
        // No live worker serves its version: no job, no slot; a worker of it wakes the run.
        await this.versions.park(run, reason, version);
        return PARKED;
      }
      target = routed;
    }
    return this.addStep(target, reason, version, unique, into);
  }

  /**
   * The target a versioned run's step goes to: its own version (pinned), or the agent's current
   * one when its version is 'auto-upgrade'; null when no live worker serves that version.
   */
  private async versionTarget(run: StepTarget): Promise<StepTarget | null> {
    const pinned = run.agentVersion as string;
    const route = await this.versions.route(run.agent, pinned);
    // A version never advertised (its adverts expired): routed by agent, as before versions.
    if (route === null) return run;
    if (route.versioning === 'auto-upgrade') {
      const current = await this.versions.current(run.agent);
      if (current !== null && current !== pinned) {
        const moved = { ...run, agentVersion: current };
        const next = await this.versions.route(run.agent, current);
        if (next?.live === true) return moved;
      }
    }
    if (route.live) return run;
    // Parked only while other versions of the agent are served (a deploy moved on): with no
    // worker of the agent at all, its job waits in its version's queue, as a run of an agent
    // without workers always did (waitingForWorker), and runs when one starts.
    return (await this.versions.agentServed(run.agent)) ? null : run;
  }

  private async addStep(
    run: StepTarget,
    reason: StepJob['reason'],
    version: number,
    unique: boolean,
    into: Queue | undefined,
  ): Promise<string> {
    const dedupId = stepDedupId(run.runId, version);
    const jobId = `${unique ? 'wake' : dedupId}.${randomUUID().slice(0, 8)}`;
    const data: StepJob = {
      v: JOB_PAYLOAD_VERSION,
      kind: 'step',
      runId: run.runId,
      tenantId: run.tenantId,
      agent: run.agent,
      ...(run.agentVersion === undefined ? {} : { agentVersion: run.agentVersion }),
      reason,
      expectedVersion: version,
      ...(run.priority === undefined ? {} : { priority: run.priority }),
    };
    const queue = into ?? (await this.runQueue(run));
    await queue.add(reason, data, {
      jobId,
      priority: bullPriority(run.priority),
      attempts: 8,
      backoff: { type: 'exponential', delay: 100 },
      ...this.retention(),
      ...(unique ? {} : { deduplication: { id: dedupId } }),
    });
    return jobId;
  }

  /**
   * The live (not finished) step job for the run's `version`, if any: what the reconciler asks
   * before it schedules a pass of its own. The earlier layouts count while old producers may
   * still put the run's jobs there.
   */
  async liveStepJob(
    runId: string,
    agent: string,
    version: number,
    agentVersion?: string,
  ): Promise<string | null> {
    const queues = [
      await this.runQueue({ runId, agent, agentVersion }),
      this.queue(stepQueueName(agent)),
    ];
    for (const queue of [...queues, this.legacySteps]) {
      const jobId = await queue.getDeduplicationJobId(stepDedupId(runId, version));
      if (!jobId) continue;
      const job = await Job.fromId(queue, jobId);
      if (job && isLive(await job.getState())) return jobId;
    }
    return null;
  }

  /**
   * Removes the run's step job for `version` from the shard queues of other task queues, where
   * it waits and is not being run: what a producer left in the wrong queue (its view of the
   * agents' task queues was stale, or the agent moved) while the run is rescheduled on the right
   * one. Without this, the job stayed in a queue no worker serves. A job already taken (active)
   * is left to the worker that holds it. Returns how many were removed.
   */
  async removeStrayStepJobs(
    runId: string,
    agent: string,
    version: number,
    agentVersion?: string,
  ): Promise<number> {
    const current = (await this.runQueue({ runId, agent, agentVersion })).name;
    const dedupId = stepDedupId(runId, version);
    let removed = 0;
    for (const name of await this.registered()) {
      if (name === current || parseShardQueueName(name) === null) continue;
      const queue = this.queue(name);
      const jobId = await queue.getDeduplicationJobId(dedupId);
      if (!jobId) continue;
      const job = await Job.fromId(queue, jobId);
      const state = job ? await job.getState() : 'unknown';
      if (!job || !['waiting', 'prioritized', 'delayed'].includes(state)) continue;
      // Removing a job that a worker takes meanwhile fails (it is locked): that is fine.
      if (
        await job.remove().then(
          () => true,
          () => false,
        )
      )
        removed += 1;
    }
    return removed;
  }

  /** The queue named by a '<queue>:<jobId>' entry (lease drivers, failed-job lists). */
  private entry(entry: string): { queue: Queue; jobId: string } | null {
    // Shard queue names hold no ':' either; the job id may.
    const at = entry.indexOf(':');
    if (at < 0) return null;
    const name = entry.slice(0, at);
    if (queueLayout(name) === null) return null;
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
   * The job of this tool-call attempt made by a step job of `stepQueue`: in that queue's child
   * queue, else one an older version put in the legacy queue (a job forwarded from there always
   * has a twin in the run's queue, which is found first).
   */
  async toolJob(
    stepQueue: string,
    runId: string,
    toolCallId: string,
    attempt: number,
  ): Promise<Job | undefined> {
    const jobId = toolJobId(runId, toolCallId, attempt);
    return (
      (await Job.fromId(this.queue(childQueueOf(stepQueue)), jobId)) ??
      (await Job.fromId(this.legacyTools, jobId))
    );
  }

  /**
   * The BullMQ keys the jobs of these tool-call attempts would have, children of a step job of
   * `stepQueue`. They share that queue's hash tag, so one multi-key EXISTS over them tells
   * whether a fresh round has any job yet, on a cluster too.
   */
  toolJobKeys(
    stepQueue: string,
    runId: string,
    calls: readonly { readonly toolCallId: string; readonly attempt: number }[],
  ): string[] {
    const queue = this.queue(childQueueOf(stepQueue));
    return calls.map((c) => jobHashKey(queue, toolJobId(runId, c.toolCallId, c.attempt)));
  }

  /**
   * Whether the tool job of this call attempt exists and has not finished, in the run's queue
   * or the agent's queue of the previous layout (the reconciler's question).
   */
  async liveToolJob(
    agent: string,
    runId: string,
    toolCallId: string,
    attempt: number,
    agentVersion?: string,
  ): Promise<boolean> {
    const current = (await this.runQueue({ runId, agent, agentVersion })).name;
    for (const stepQueue of [current, stepQueueName(agent)]) {
      const job = await this.toolJob(stepQueue, runId, toolCallId, attempt);
      if (job && isLive(await job.getState())) return true;
    }
    return false;
  }

  /**
   * Adds one tool call, as a child of a step job when `parent` is given (so the step waits for
   * it: a BullMQ flow), in the parent's queue's child queue: never recomputed from the run, since
   * the parent may sit in a queue of an earlier layout or K. Without a parent: the run's queue.
   */
  async addToolChild(
    job: ToolJob,
    agent: string,
    parent?: { id: string; queue: string },
  ): Promise<string> {
    const jobId = toolJobId(job.runId, job.toolCallId, job.attempt);
    const parentQueue = parent ? this.fromQualifiedName(parent.queue) : null;
    const queue = parentQueue
      ? this.queue(childQueueOf(parentQueue.name))
      : await this.runQueue({ runId: job.runId, agent, agentVersion: job.agentVersion });
    await queue.add(
      `tool:${job.toolCallId}`,
      { ...job, agent },
      {
        jobId,
        priority: bullPriority(job.priority),
        ...(parent ? { parent } : {}),
        attempts: this.toolAttempts,
        backoff: { type: 'exponential', delay: 200 },
        // A tool that keeps crashing must not leave its step in waiting-children forever: the
        // parent goes on and records the failure as the call's result.
        ignoreDependencyOnFailure: true,
        ...this.retention(),
      },
    );
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
   * these queues. BullMQ's own removeOnComplete/removeOnFail age runs only when a job of the
   * queue finishes, and then drops a bounded number, so after a burst nothing else brings Redis
   * back to its base: each queue and state is cleaned `perCall` jobs per Lua call (short, so
   * Redis keeps serving between calls) until a call finds fewer, up to `maxPerQueue` per queue
   * and state.
   */
  async cleanFinished(
    queues: readonly Queue[],
    opts: { readonly perCall?: number; readonly maxPerQueue?: number } = {},
  ): Promise<number> {
    const grace = this.jobRetentionSeconds * 1000;
    const perCall = opts.perCall ?? 1000;
    const maxPerQueue = opts.maxPerQueue ?? 200_000;
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
