import { JOB_PAYLOAD_VERSION, StepJobSchema, type ToolExecutionResult } from '@baton/protocol';
import {
  InferenceAccumulator,
  assistantMessageId,
  executeTool,
  invocationFor,
  rebaseOnThread,
  runCommands,
  type Engine,
  type ToolInvocation,
  type Transition,
} from '@baton/core';
import { DelayedError, Job, WaitingChildrenError } from 'bullmq';
import { releaseOrWake } from './lease-release.ts';
import { runAuxKey, type Lease } from './run-lease.ts';
import type { Loaded } from './run-committer.ts';
import { toolJobId } from './queues.ts';
import type { WorkerDeps } from './worker-deps.ts';

class StaleInference extends Error {}

type StepOutcome = 'busy' | 'missing' | 'waiting' | 'done' | 'continued' | 'delegated';

/**
 * One pass over one run: holds the run's lease, derives what to do from the checkpoint (so any
 * worker can pick up any run at any point), performs at most one inference round, and hands the
 * next round to a new job. In the parallel modes tool calls become child jobs and this job waits
 * for them in BullMQ's waiting-children state, holding no lease and no worker slot.
 */
export class StepProcessor {
  private readonly deps: WorkerDeps;

  constructor(deps: WorkerDeps) {
    this.deps = deps;
  }

  async process(job: Job, token: string | undefined): Promise<StepOutcome> {
    const data = StepJobSchema.parse(job.data);
    const log = this.deps.logger.child({ runId: data.runId, jobId: job.id, reason: data.reason });
    const lease = await this.deps.leases.acquire(data.runId);
    if (!lease) {
      // The holder will see our pending mark and look at the run again. Only a retried job
      // (its first attempt stalled: its worker died) may be facing a dead holder whose mark
      // nobody reads; it comes back once that lease has had time to expire.
      const retried = job.attemptsStarted > 1 || job.stalledCounter > 0;
      log.debug({ retried }, 'run busy');
      if (retried && token !== undefined) {
        await job.moveToDelayed(Date.now() + this.deps.leases.ttlMs + 100, token);
        throw new DelayedError();
      }
      return 'busy';
    }
    // Someone asked for the run while we held it: make sure a pass follows.
    const release = (): Promise<void> => releaseOrWake(this.deps, lease, data.tenantId);
    try {
      return await this.run(job, token, lease, release, log);
    } finally {
      await release();
    }
  }

  private async run(
    job: Job,
    token: string | undefined,
    lease: Lease,
    release: () => Promise<void>,
    log: WorkerDeps['logger'],
  ): Promise<StepOutcome> {
    const { deps } = this;
    const runId = lease.runId;
    const jobData = job.data as { parentOfStep?: number };
    let inferred = jobData.parentOfStep !== undefined;
    // The state is carried from commit to commit; it is reloaded only when others may have
    // changed it (after a model call, or when someone asked for the run while we held it).
    let state: Loaded | null = await deps.committer.load(runId);
    for (;;) {
      if (!state) return 'missing';
      const engine = deps.registry.engine(state.checkpoint.identity.agent);
      if (!engine) {
        const message = `no worker agent named ${state.checkpoint.identity.agent} is registered on this worker`;
        await deps.committer.commit(state, (cp) => runCommands.fail(cp, message, deps.clock.now()));
        return 'done';
      }
      const registry = engine.ctx.registry;
      const drained = await this.drainResults(engine, state);
      if (drained) {
        state = drained;
        continue;
      }
      const next = engine.plan(state.checkpoint);
      const slog = log.child({ step: state.checkpoint.step, plan: next.kind });
      const now = deps.clock.now();
      switch (next.kind) {
        case 'done':
        case 'wait':
          if (await lease.releaseIfIdle()) return next.kind === 'done' ? 'done' : 'waiting';
          state = await deps.committer.load(runId);
          break;
        case 'start': {
          // A run queued behind another on its thread starts from the thread as it is now.
          const { tenantId, threadId } = state.checkpoint.identity;
          const thread = await deps.threads.load(tenantId, threadId);
          state = await deps.committer.commit(
            state,
            (cp) => engine.start(rebaseOnThread(cp, thread.messages, thread.state), now),
            registry,
          );
          break;
        }
        case 'step':
          if (inferred) {
            // One round per job: the next round is a new job, so runs interleave fairly.
            await release();
            await deps.queues.enqueueStep(state.checkpoint.identity, 'continue', state.version);
            return 'continued';
          }
          state = await deps.committer.commit(state, (cp) => engine.beginStep(cp, now), registry);
          break;
        case 'infer':
          inferred = true;
          await deps.probe?.('before-infer', { runId, step: state.checkpoint.step });
          state = await this.infer(engine, state, slog);
          break;
        case 'resume':
          state = await deps.committer.commit(
            state,
            (cp) => engine.applyDecisions(cp, now),
            registry,
          );
          break;
        case 'finish_step':
          state = await deps.committer.commit(state, (cp) => engine.finishStep(cp, now), registry);
          break;
        case 'cancel':
          deps.aborts.abort(runId);
          state = await deps.committer.commit(state, (cp) => engine.cancel(cp, now), registry);
          slog.info('run cancelled');
          break;
        case 'execute': {
          // Re-entering a round whose calls all run already changes nothing: no commit then.
          const dry = engine.prepareTools(state.checkpoint, now);
          const prepared: Loaded & { transition: Transition } =
            dry.events.length === 0
              ? { ...state, transition: dry }
              : await deps.committer.commit(state, (cp) => engine.prepareTools(cp, now), registry);
          state = prepared;
          const invocations =
            (prepared.transition as { invocations?: readonly ToolInvocation[] }).invocations ?? [];
          if (invocations.length === 0) break;
          if (!engine.ctx.tools.size || prepared.checkpoint.executionMode === 'sequential') {
            // Results land in the mailbox; the next pass of this loop applies them.
            // An aborted call (cancel) leaves the run for plan() to finish: look at it afresh.
            if (await this.executeInline(engine, prepared, invocations))
              state = await deps.committer.load(runId);
            break;
          }
          const outcome = await this.fanOut(job, token, prepared, invocations, release, slog);
          if (outcome) return outcome;
          state = await deps.committer.load(runId);
          break;
        }
      }
    }
  }

  /** Applies results recorded by tool jobs (in call order) before deciding anything else. */
  private async drainResults(engine: Engine, state: Loaded): Promise<Loaded | null> {
    const results = await this.deps.mailbox.pendingFor(state.checkpoint);
    if (results.length === 0) return null;
    return this.deps.committer.commit(
      state,
      (cp) => engine.applyToolResults(cp, results, this.deps.clock.now()),
      engine.ctx.registry,
    );
  }

  /** Streams the model (deltas appended as they come) and commits the assistant turn. */
  private async infer(
    engine: Engine,
    state: Loaded,
    log: WorkerDeps['logger'],
  ): Promise<Loaded | null> {
    const { deps } = this;
    const request = engine.inferenceRequest(state.checkpoint);
    const messageId = assistantMessageId(request.runId, request.step);
    let version = state.version;
    let marked = false;
    const append = async (body: Parameters<typeof deps.store.append>[2][number]): Promise<void> => {
      if (!marked) {
        marked = true;
        // A previous attempt of this step streamed deltas and died: clients must drop them.
        const key = runAuxKey(deps.keys, request.runId, 'inferring');
        const previous = await deps.redis.set(key, `${request.step}`, 'PX', 86_400_000, 'GET');
        if (previous === `${request.step}`)
          await append({ type: 'inference.reset', step: request.step, messageId });
      }
      try {
        await deps.store.append(request.runId, version, [body]);
      } catch {
        // A decision or cancel request committed meanwhile: append at the new version.
        const fresh = await deps.store.load(request.runId);
        if (!fresh) throw new Error(`run ${request.runId} disappeared`);
        version = fresh.version;
        if (fresh.checkpoint.cancelRequested) deps.aborts.abort(request.runId);
        await deps.store.append(request.runId, version, [body]);
      }
    };
    const tracked = deps.aborts.track(request.runId);
    const acc = new InferenceAccumulator();
    const started = deps.clock.now();
    try {
      for await (const part of engine.agent.model.stream(request, tracked.signal)) {
        acc.push(part);
        if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
          await append({
            type: part.type === 'text-delta' ? 'text.delta' : 'reasoning.delta',
            step: request.step,
            messageId,
            delta: part.delta,
          });
        }
      }
    } catch (error) {
      const fresh = await deps.committer.load(request.runId);
      if (!fresh || fresh.checkpoint.cancelRequested) return fresh; // plan() says cancel next
      // Aborted without a cancel: this process is shutting down; the job is retried elsewhere.
      if (tracked.signal.aborted)
        throw new Error('inference aborted: worker shutting down', { cause: error });
      log.warn({ err: error }, 'model failed');
      return deps.committer.commit(
        fresh,
        (c) => engine.fail(c, `model failed: ${(error as Error).message}`, deps.clock.now()),
        engine.ctx.registry,
      );
    } finally {
      tracked.done();
    }
    log.debug({ ms: deps.clock.now() - started }, 'inference finished');
    const base = version === state.version ? state : await deps.committer.load(request.runId);
    if (!base) return null;
    try {
      return await deps.committer.commit(
        base,
        (c) => {
          // Someone else finished this inference (a duplicate job): ours is dropped.
          if (c.step !== request.step || c.phase !== 'before_inference') throw new StaleInference();
          return engine.commitInference(c, acc.result(), deps.clock.now());
        },
        engine.ctx.registry,
      );
    } catch (error) {
      if (error instanceof StaleInference) return deps.committer.load(request.runId);
      throw error;
    }
  }

  /** Sequential mode: the call runs inside this job; its result is recorded before it is applied. */
  private async executeInline(
    engine: Engine,
    state: Loaded,
    invocations: readonly ToolInvocation[],
  ): Promise<boolean> {
    const { deps } = this;
    const runId = state.checkpoint.identity.runId;
    for (const invocation of invocations) {
      if (!(await deps.mailbox.get(runId, invocation.toolCallId, invocation.attempt))) {
        let result: ToolExecutionResult;
        const tracked = deps.aborts.track(runId);
        try {
          await deps.probe?.('before-tool', {
            runId,
            toolCallId: invocation.toolCallId,
            attempt: invocation.attempt,
            idempotencyKey: invocation.idempotencyKey,
            inline: true,
          });
          result = await executeTool(engine.ctx.tools.get(invocation.toolName), invocation, {
            identity: state.checkpoint.identity,
            state: state.checkpoint.state,
            signal: tracked.signal,
            now: () => deps.clock.now(),
          });
        } catch (error) {
          const fresh = await deps.store.load(runId);
          if (tracked.signal.aborted && fresh?.checkpoint.cancelRequested) return true;
          throw error;
        } finally {
          tracked.done();
        }
        await deps.mailbox.record(runId, result);
      }
    }
    return false;
  }

  /**
   * Parallel modes: each call becomes a child job of this step job. Returns an outcome when this
   * job must stop here (it waits for its children), or null to keep going in this pass.
   */
  private async fanOut(
    job: Job,
    token: string | undefined,
    state: Loaded,
    invocations: readonly ToolInvocation[],
    release: () => Promise<void>,
    log: WorkerDeps['logger'],
  ): Promise<StepOutcome | null> {
    const { deps } = this;
    const { identity } = state.checkpoint;
    const self = { id: job.id ?? '', queue: job.queueQualifiedName };
    const parentKey = runAuxKey(deps.keys, identity.runId, 'parent');
    // A replay joins the round's waiting parent when there is one (BullMQ accepts a child for a
    // parent in waiting-children), so the round stays one flow in Bull Board.
    let parent = self;
    const recorded = await deps.redis.get(parentKey);
    if (recorded) {
      const candidate = JSON.parse(recorded) as { id: string; queue: string; step: number };
      if (candidate.step === state.checkpoint.step && candidate.id !== self.id) {
        const parentJob = await Job.fromId(deps.queues.steps, candidate.id);
        if (parentJob && (await parentJob.getState()) === 'waiting-children')
          parent = { id: candidate.id, queue: candidate.queue };
      }
    }
    let added = 0;
    for (const inv of invocations) {
      const jobId = toolJobId(identity.runId, inv.toolCallId, inv.attempt);
      const existing = await Job.fromId(deps.queues.tools, jobId);
      if (existing) {
        const jobState = await existing.getState();
        if (jobState === 'failed') {
          // The tool job gave up (crashed or stalled too often): that is the call's result.
          await deps.mailbox.record(identity.runId, {
            toolCallId: inv.toolCallId,
            attempt: inv.attempt,
            result: {
              kind: 'error',
              message: `tool job failed: ${existing.failedReason || 'unknown'}`,
              code: 'tool_job_failed',
            },
            patches: [],
            startedAt: deps.clock.now(),
            finishedAt: deps.clock.now(),
          });
          added = -1;
          break;
        }
        continue;
      }
      await deps.queues.addToolChild(
        {
          v: JOB_PAYLOAD_VERSION,
          kind: 'tool',
          runId: identity.runId,
          tenantId: identity.tenantId,
          step: state.checkpoint.step,
          toolCallId: inv.toolCallId,
          attempt: inv.attempt,
        },
        parent,
      );
      added += 1;
    }
    if (added < 0) return null; // a failure was recorded: drain it in this pass
    if (added === 0) return 'delegated'; // every call already has a job; their results drive the run
    log.debug({ children: added, parent: parent.id }, 'tool calls fanned out');
    if (parent !== self) return 'delegated';
    await deps.redis.set(
      parentKey,
      JSON.stringify({ ...self, step: state.checkpoint.step }),
      'PX',
      86_400_000,
    );
    await job.updateData({ ...job.data, parentOfStep: state.checkpoint.step });
    // Let the children (and decisions) advance the run while this job waits.
    await release();
    if (token !== undefined && (await job.moveToWaitingChildren(token)))
      throw new WaitingChildrenError();
    return 'delegated';
  }
}

export { invocationFor };
