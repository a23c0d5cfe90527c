import { DelayedError, type Job, type Processor } from 'bullmq';
import { readFormat, type StepJob } from '@baton/protocol';
import { NewerFormatError } from '@baton/runtime/internal';
import { ProcessGate } from './process-gate.ts';
import type { StallAccounting } from './stall-accounting.ts';
import type { StepProcessor } from './step-processor.ts';
import type { ToolProcessor } from './tool-processor.ts';
import { tracedProcessor } from './tracing.ts';
import type { WorkerDeps } from './worker-deps.ts';

/** How long a job of an agent this worker does not run waits before it is offered again. */
const NOT_HERE_DELAY_MS = 2_000;
/** How long a job this release cannot read (a newer one's) waits before it is offered again. */
const NEWER_FORMAT_DELAY_MS = 2_000;

export interface RunJobsOptions {
  readonly deps: WorkerDeps;
  /** BATON_TASK_QUEUE: the pool this worker serves its agents on. */
  readonly taskQueue: string;
  readonly steps: StepProcessor;
  readonly tools: ToolProcessor;
  readonly stalls: StallAccounting;
  readonly stepConcurrency: number;
  readonly toolConcurrency: number;
}

/**
 * Runs the jobs of a run queue: a shard queue holds both a run's step jobs and their tool
 * children (the job's `kind` tells them apart), and the queues of earlier layouts are drained
 * through the same processor.
 *
 * Concurrency: one BullMQ Worker per shard, each allowed WORKER_CONCURRENCY + TOOL_CONCURRENCY
 * jobs (so any one shard can fill the process as one queue did before), and two process-wide
 * gates that bound the steps and the tools actually running across all shards to
 * WORKER_CONCURRENCY and TOOL_CONCURRENCY. With K = 1 that is today's bound exactly. The price:
 * with K > 1 a busy process may hold more jobs than it runs (they wait on the gate, locked and
 * renewed, while another process could have taken them); per-shard concurrency of (W + T) / K
 * would avoid that but cap a run's parallel tool calls at (W + T) / K per process.
 */
export class RunJobs {
  private readonly opts: RunJobsOptions;
  private readonly stepGate: ProcessGate;
  private readonly toolGate: ProcessGate;
  private readonly step: Processor;
  private readonly tool: Processor;

  constructor(opts: RunJobsOptions) {
    this.opts = opts;
    this.stepGate = new ProcessGate(opts.stepConcurrency);
    this.toolGate = new ProcessGate(opts.toolConcurrency);
    const { stalls, steps, tools } = opts;
    // A first attempt's holder note may come back to be written with the processor's first
    // script (StallAccounting.admit): each processor sends it before any other work.
    this.step = tracedProcessor('step', async (job: Job, token?: string) => {
      const note = await stalls.admit(job);
      return steps.process(job, token, note);
    });
    this.tool = tracedProcessor('tool', async (job: Job) => {
      const note = await stalls.admit(job);
      return tools.process(job, note);
    });
  }

  /** BullMQ concurrency of each Worker on a run queue (see the class comment). */
  get perQueueConcurrency(): number {
    return this.opts.stepConcurrency + this.opts.toolConcurrency;
  }

  /** The processor of a run queue's Worker. */
  readonly process = async (job: Job, token?: string): Promise<unknown> => {
    const data = job.data as { v?: unknown; kind?: unknown; runId?: unknown; agent?: unknown };
    // Before anything reads the payload: a newer release's job is left for a newer worker.
    const format = readFormat('job', data.v);
    if (format.action === 'defer') return this.leaveForNewer(job, token, format.reason);
    const kind = data.kind === 'tool' ? 'tool' : 'step';
    const agent = await this.agentOf(job);
    if (agent !== null && !this.opts.deps.registry.engine(agent))
      return this.notHere(job, token, agent, kind);
    // A job pinned to another version of the agent (a producer's cached route was stale) never
    // runs on this code: moved to its version's queue, or parked until a worker of it starts.
    const wanted = (job.data as { agentVersion?: unknown }).agentVersion;
    if (
      agent !== null &&
      typeof wanted === 'string' &&
      wanted !== this.opts.deps.queues.versions.localVersion(agent)
    )
      return this.otherVersion(job, token, agent, wanted, kind);
    // BullMQ's priority of the job (the run's level; 0 for jobs of older producers).
    const priority = job.opts.priority ?? 0;
    try {
      return await (kind === 'tool'
        ? this.toolGate.run(() => this.tool(job, token), priority)
        : this.stepGate.run(() => this.step(job, token), priority));
    } catch (error) {
      // The run's checkpoint (or another value the job read) is a newer release's.
      if (NewerFormatError.isInstance(error)) return this.leaveForNewer(job, token, error.message);
      throw error;
    }
  };

  /**
   * A job, or the run it drives, in a format of a newer release (a rolling upgrade under way):
   * it goes back to its queue, delayed, for a worker of that release, and is never failed.
   * (A refused format, no version at all, fails in the payload's parse as before.)
   */
  private async leaveForNewer(job: Job, token: string | undefined, why: string): Promise<never> {
    this.opts.deps.logger.warn(
      { jobId: job.id, runId: (job.data as { runId?: unknown }).runId },
      `${why}; the job waits for a worker of a newer release of Baton`,
    );
    await job.moveToDelayed(Date.now() + NEWER_FORMAT_DELAY_MS, token);
    throw new DelayedError();
  }

  /** The run's agent: in the job (this version's producers), else read from the run. */
  private async agentOf(job: Job): Promise<string | null> {
    const data = job.data as { runId?: unknown; agent?: unknown };
    if (typeof data.agent === 'string') return data.agent;
    if (typeof data.runId !== 'string') return null;
    return (await this.opts.deps.store.meta(data.runId))?.agent ?? null;
  }

  /**
   * A job of another version of an agent this worker runs. A step job is enqueued again for its
   * version (its queue, or parked when no worker of it lives); a tool job must stay beside its
   * parent, so it waits and is offered again.
   */
  private async otherVersion(
    job: Job,
    token: string | undefined,
    agent: string,
    agentVersion: string,
    kind: 'step' | 'tool',
  ): Promise<string> {
    const { deps } = this.opts;
    if (kind === 'step') {
      const data = job.data as StepJob;
      await deps.queues.enqueueStep(
        {
          runId: data.runId,
          tenantId: data.tenantId,
          agent,
          agentVersion,
          priority: data.priority,
        },
        data.reason,
        data.expectedVersion,
        true,
      );
      deps.logger.info(
        { runId: data.runId, jobId: job.id, agent, agentVersion },
        "job moved to its agent version's task queue",
      );
      return 'moved';
    }
    deps.logger.warn(
      { jobId: job.id, agent, agentVersion, serves: deps.queues.versions.localVersion(agent) },
      `a tool job of version ${agentVersion} of agent ${agent} reached a worker of another version; it waits for a worker of its version`,
    );
    await job.moveToDelayed(Date.now() + NOT_HERE_DELAY_MS, token);
    throw new DelayedError();
  }

  /**
   * A job of an agent this worker does not run (the agent moved, or its workers' set lost the
   * task queue to another set; TaskQueuePool keeps sets apart otherwise): never the run's failure. A step job goes to the agent's current
   * task queue when that is another one; otherwise (or a tool job, which must stay beside its
   * parent) it waits and is offered again, with a warning that says what to fix.
   */
  private async notHere(
    job: Job,
    token: string | undefined,
    agent: string,
    kind: 'step' | 'tool',
  ): Promise<string> {
    const { deps, taskQueue } = this.opts;
    const current = await deps.queues.taskQueues.advertised(agent);
    if (kind === 'step' && current !== taskQueue) {
      const data = job.data as StepJob;
      await deps.queues.enqueueStep(
        { runId: data.runId, tenantId: data.tenantId, agent, priority: data.priority },
        data.reason,
        data.expectedVersion,
        true,
      );
      deps.logger.info(
        { runId: data.runId, jobId: job.id, agent, taskQueue: current },
        "job moved to its agent's task queue",
      );
      return 'moved';
    }
    deps.logger.warn(
      { jobId: job.id, agent, taskQueue },
      `a job of agent ${agent} reached a worker that does not run it on task queue ${taskQueue} ` +
        '(its agent moved, or no live worker runs it); it waits for a worker that runs it',
    );
    await job.moveToDelayed(Date.now() + NOT_HERE_DELAY_MS, token);
    throw new DelayedError();
  }
}
