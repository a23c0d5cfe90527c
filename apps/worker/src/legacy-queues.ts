import { StepJobSchema, ToolJobSchema } from '@baton/protocol';
import type { Job } from 'bullmq';
import type { WorkerDeps } from './worker-deps.ts';

export type ForwardOutcome = 'forwarded' | 'missing';

/**
 * Drains the shared `steps` / `tools` queues that Baton versions before per-agent routing
 * produce into, so that during a rolling deploy no run is stranded there: every job is moved to
 * its run's queue (a shard of its agent's task queue), where workers that run the agent take it. Forwarding writes
 * nothing to the run (its checkpoint decides what happens), so a forwarded job that an old worker
 * also handled costs one no-op pass.
 */
export class LegacyQueueForwarder {
  private readonly deps: Pick<WorkerDeps, 'store' | 'queues' | 'logger'>;

  constructor(deps: Pick<WorkerDeps, 'store' | 'queues' | 'logger'>) {
    this.deps = deps;
  }

  /** A step job becomes a fresh pass over the run in its run's queue. */
  async step(job: Job): Promise<ForwardOutcome> {
    const data = StepJobSchema.parse(job.data);
    const meta = await this.deps.store.meta(data.runId);
    if (!meta) return 'missing';
    // Rare: a fresh read of where the agent is served (a cached one may be seconds old).
    await this.deps.queues.taskQueues.advertised(meta.agent);
    await this.deps.queues.enqueueStep(
      {
        runId: data.runId,
        tenantId: data.tenantId,
        agent: meta.agent,
        agentVersion: meta.agentVersion,
        priority: meta.priority,
      },
      data.reason,
      data.expectedVersion,
      true,
    );
    this.deps.logger.debug({ runId: data.runId, jobId: job.id }, 'legacy step job forwarded');
    return 'forwarded';
  }

  /**
   * A tool job moves to its run's queue under the same job id, so the round's fan-out finds it
   * there (and adds no second job for the call). Its legacy parent goes on once this
   * child completes; the tool job applies its own result, as every tool job does.
   */
  async tool(job: Job): Promise<ForwardOutcome> {
    const data = ToolJobSchema.parse(job.data);
    const meta = await this.deps.store.meta(data.runId);
    if (!meta) return 'missing';
    await this.deps.queues.taskQueues.advertised(meta.agent);
    await this.deps.queues.addToolChild(data, meta.agent);
    this.deps.logger.debug({ runId: data.runId, jobId: job.id }, 'legacy tool job forwarded');
    return 'forwarded';
  }
}
