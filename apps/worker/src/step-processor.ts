import { StepJobSchema } from '@baton/protocol';
import {
  rebaseOnThread,
  runCommands,
  type InferenceRequest,
  type InferenceResponse,
} from '@baton/core';
import { DelayedError, WaitingChildrenError, type Job } from 'bullmq';
import { startChildCalls } from './child-runs.ts';
import { fanOutToolCalls, parentRecordOf } from './fan-out.ts';
import { leaseAndLoad, releaseOrWake } from './lease-release.ts';
import { StagedCommits } from './staged-commits.ts';
import { infer } from './step-inference.ts';
import { executeInline } from './inline-tools.ts';
import {
  type AwaitedResults,
  type HolderNote,
  type Lease,
  LeaseLostError,
  type Loaded,
} from '@baton/runtime/internal';
import type { WorkerDeps } from './worker-deps.ts';
import { lazyChild } from './lazy-logger.ts';

export type StepOutcome =
  'busy' | 'missing' | 'waiting' | 'done' | 'continued' | 'delegated' | 'lease_lost';

/** One pass over a run, under the lease its job just took. */
interface Pass {
  readonly token: string | undefined;
  /** The version the job was enqueued for (its deduplication id). */
  readonly jobVersion: number;
  readonly lease: Lease;
  /** What the lease acquire loaded (null: the run is gone) and read for its running calls. */
  readonly initial: Loaded | null;
  readonly awaited: AwaitedResults | null;
  readonly log: WorkerDeps['logger'];
  /** Not this job's first pass: counted as having called the model (one call per activation). */
  readonly inferredBefore: boolean;
}

/** A model answer that was obtained for `request` and not yet committed. */
interface PendingInference {
  readonly step: number;
  readonly request: InferenceRequest;
  readonly response: InferenceResponse;
}

/**
 * One pass over one run: holds the run's lease, derives what to do from the checkpoint (so any
 * worker can pick up any run at any point), performs at most one inference round, and hands the
 * next round to a new job. In the parallel modes tool calls become child jobs and this job waits
 * for them in BullMQ's waiting-children state, holding no lease and no worker slot.
 *
 * Every write is fenced on the lease (see RunLeases). When a commit meets a version conflict
 * (a decision or cancel request landed meanwhile), the pass re-plans from a fresh load: the
 * transition it computed is dropped, never re-applied to the fresh checkpoint. The only effect
 * result carried across a re-plan is a model answer, and only into a plan that asks for exactly
 * the same inference.
 */
export class StepProcessor {
  private readonly deps: WorkerDeps;

  constructor(deps: WorkerDeps) {
    this.deps = deps;
  }

  /** `note`: the attempt's holder note, written with its first lease acquire (see RunJobs). */
  async process(
    job: Job,
    token: string | undefined,
    note: HolderNote | null = null,
  ): Promise<StepOutcome> {
    const data = StepJobSchema.parse(job.data);
    const log = this.deps.logger.child({ runId: data.runId, jobId: job.id, reason: data.reason });
    const driver = `${job.queueName}:${job.id ?? ''}`;
    for (let pass = 0; ; pass += 1) {
      const { acquired } = await leaseAndLoad(
        this.deps,
        data.runId,
        driver,
        undefined,
        pass === 0 ? note : null,
      );
      if (!acquired) {
        // Children all finished before this job could wait for them: whoever holds the run is
        // a step job (children release before they finish), and it sees our pending mark.
        if (pass > 0) return 'delegated';
        // The holder will see our pending mark and look at the run again. Only a retried job
        // (its first attempt stalled: its worker died) may be facing a dead holder whose mark
        // nobody reads; it comes back once that lease has had time to expire.
        const retried = job.attemptsStarted > 1 || job.stalledCounter > 0;
        log.debug({ retried }, 'run busy');
        if (retried && token !== undefined) {
          // A finished run needs no pass: whatever still holds its lease, this job is over
          // (waiting for that lease again and again would keep the job alive without bound).
          const meta = await this.deps.store.meta(data.runId);
          if (!meta) return 'missing';
          if (meta.status === 'done') return 'done';
          await job.moveToDelayed(Date.now() + this.deps.leases.ttlMs + 100, token);
          throw new DelayedError();
        }
        return 'busy';
      }
      const { lease } = acquired;
      // Someone asked for the run while we held it: make sure a pass follows.
      const release = (): Promise<void> => releaseOrWake(this.deps, lease);
      let outcome: StepOutcome | 'again';
      try {
        outcome = await this.run(job, {
          token,
          jobVersion: data.expectedVersion,
          lease,
          initial: acquired.state,
          awaited: acquired.awaited,
          log,
          inferredBefore: pass > 0,
        });
      } catch (error) {
        if (!LeaseLostError.isInstance(error) && !lease.lost) throw error;
        await this.afterLeaseLost(lease, data.tenantId, log);
        return 'lease_lost';
      } finally {
        await release();
      }
      if (outcome !== 'again') return outcome;
    }
  }

  /**
   * This job stopped writing the moment its lease went. Another worker usually owns the run by
   * then; if nobody does (the lease simply ran out), a fresh pass is scheduled so the run moves on.
   */
  private async afterLeaseLost(
    lease: Lease,
    tenantId: string,
    log: WorkerDeps['logger'],
  ): Promise<void> {
    const { deps } = this;
    log.warn('lease lost: another worker owns the run now; this pass stops without writing');
    if (await deps.store.bookkeeping.leaseHeld(lease.runId)) return;
    const meta = await deps.store.meta(lease.runId);
    // A finished run needs no pass (its final commit drops the lease of whoever held it).
    if (!meta || meta.status === 'done') return;
    await deps.queues.enqueueStep(
      {
        runId: lease.runId,
        tenantId,
        agent: meta.agent,
        agentVersion: meta.agentVersion,
        priority: meta.priority,
      },
      'reconcile',
      0,
      true,
    );
  }

  private async run(job: Job, pass: Pass): Promise<StepOutcome | 'again'> {
    const { deps } = this;
    const { token, jobVersion, lease, initial, log, inferredBefore } = pass;
    const runId = lease.runId;
    // At most one model call per activation. A parent re-entered by BullMQ after its tool
    // children finished is a new activation taken from the queue like any job, so it carries the
    // run into its next round itself instead of handing it to yet another job.
    let inferred = inferredBefore;
    let awaited = pass.awaited;
    let pending: PendingInference | null = null;
    // Transitions are staged and written as one commit right before the next effect (see
    // StagedCommits). The state is reloaded only when others may have changed it (a conflict,
    // after a model call, or when someone asked for the run meanwhile).
    const run = new StagedCommits({ deps, lease, initial });
    const reload = async (): Promise<void> => run.reset(await deps.committer.load(runId));
    for (;;) {
      lease.check();
      const state = run.state;
      if (!state) return 'missing';
      const { checkpoint: cp } = state;
      const engine = deps.registry.engine(cp.identity.agent);
      const now = deps.clock.now();
      if (!engine) {
        const message = `no worker agent named ${cp.identity.agent} is registered on this worker`;
        run.stage(runCommands.fail(cp, message, now));
        continue;
      }
      const registry = engine.ctx.registry;
      // What the lease acquire read describes the loaded state at that moment only: used once
      // (a later pass over the same state may follow tools that ran inline meanwhile).
      const results = await deps.mailbox.pendingFor(cp, state === initial ? awaited : null);
      awaited = null;
      if (results.length > 0) {
        // Results recorded by tool jobs are applied (in call order) before anything else.
        run.stage(engine.applyToolResults(cp, results, now), registry);
        continue;
      }
      const next = engine.plan(cp);
      const slog = (): WorkerDeps['logger'] => lazyChild(log, { step: cp.step, plan: next.kind });
      switch (next.kind) {
        case 'done':
        case 'wait': {
          const idle = next.kind === 'done' ? 'done' : 'waiting';
          const written = await run.flush({ releaseIfIdle: true });
          if (written.kind === 'conflict') break;
          if (written.kind === 'released') return idle;
          if (written.kind === 'nothing' && (await lease.releaseIfIdle())) return idle;
          await reload();
          break;
        }
        case 'start': {
          // A run queued behind another on its thread starts from the thread as it is now.
          const { tenantId, threadId } = cp.identity;
          const thread = await deps.threads.history(
            tenantId,
            threadId,
            cp.messages.slice(0, cp.historyLength),
          );
          const rebased = rebaseOnThread(cp, thread.messages, thread.state);
          run.stage(engine.start(rebased, now), registry);
          break;
        }
        case 'step':
          if (inferred) return this.handOn(run, lease, jobVersion, false);
          run.stage(engine.beginStep(cp, now), registry);
          break;
        case 'infer': {
          const request = engine.inferenceRequest(cp);
          // Compared (serialized) only after a re-plan, never on the normal path: the request
          // holds the whole conversation.
          const reuse =
            pending !== null &&
            pending.step === cp.step &&
            JSON.stringify(pending.request) === JSON.stringify(request);
          if (!reuse || !pending) {
            pending = null;
            // A second model call in one job only after a re-plan changed the request: hand
            // the run to a fresh job instead of looping here.
            if (inferred) return this.handOn(run, lease, jobVersion, true);
            // The model call is an effect: what led to it is written first.
            if ((await run.flush()).kind === 'conflict') break;
            inferred = true;
            await deps.probe?.('before-infer', { runId, step: cp.step });
            const outcome = await infer(deps, engine, request, lease, slog());
            if (outcome.kind === 'replan') {
              await reload();
              break;
            }
            if (outcome.kind === 'failed') {
              run.stage(engine.fail(cp, outcome.message, deps.clock.now()));
              break;
            }
            pending = { step: cp.step, request, response: outcome.response };
            await deps.probe?.('after-infer', { runId, step: cp.step });
          }
          // Staged like any transition: kept for reuse until a write of it succeeds.
          run.stage(engine.commitInference(cp, pending.response, deps.clock.now()), registry);
          break;
        }
        case 'resume':
          run.stage(engine.applyDecisions(cp, now), registry);
          break;
        case 'finish_step':
          run.stage(engine.finishStep(cp, now), registry);
          break;
        case 'cancel':
          deps.aborts.abort(runId);
          run.stage(engine.cancel(cp, now), registry);
          slog().info('run cancelled');
          break;
        case 'execute': {
          // Re-entering a round whose calls all run already changes nothing: no commit then.
          const t = engine.prepareTools(cp, now);
          if (t.events.length > 0) run.stage(t, registry);
          if (t.invocations.length === 0) break;
          // Calls this pass started (not running at this attempt before its commit) can have no
          // job yet: the commit that marks a call running always precedes its job.
          const startedHere = t.invocations.every((inv) => {
            const before = cp.calls[inv.toolCallId];
            return before?.status !== 'running' || before.attempt !== inv.attempt;
          });
          // A fresh round that will fan out makes this job its parent: that record goes out with
          // the calls' commit instead of a write of its own. Should the job not wait after all
          // (agent calls only, every child done first), the record names a job that is not
          // waiting for children, which is exactly how fan-out treats a stale one.
          const parentRecord =
            run.dirty &&
            startedHere &&
            token !== undefined &&
            engine.ctx.tools.size > 0 &&
            t.checkpoint.executionMode !== 'sequential' &&
            t.invocations.every((inv) => inv.attempt === 0)
              ? parentRecordOf(job, t.checkpoint.step)
              : undefined;
          // Tools are effects: the calls are written as running first. A conflict re-plans like
          // everywhere else: these invocations were for stale state.
          if ((await run.flush({ parentRecord })).kind === 'conflict') break;
          const prepared = run.state;
          if (!prepared) return 'missing';
          // Agent tools: their calls run as child runs (the links are written by the flush
          // above, before any child exists), which hold nothing of this job.
          const elog = slog();
          const children = await startChildCalls(
            deps,
            prepared.checkpoint,
            t.invocations,
            elog,
            startedHere,
          );
          if (children.recorded) {
            await reload();
            break;
          }
          const invocations = children.rest;
          if (invocations.length === 0) return 'delegated';
          if (!engine.ctx.tools.size || prepared.checkpoint.executionMode === 'sequential') {
            // Results land in the mailbox; the next pass of this loop applies them.
            // An aborted call (cancel) leaves the run for plan() to finish: look at it afresh.
            if (await executeInline(deps, engine, prepared, invocations, lease)) await reload();
            break;
          }
          const outcome = await fanOutToolCalls(deps, job, prepared, invocations, elog, {
            startedHere,
            parentRecorded: parentRecord !== undefined,
          });
          if (outcome === 'recorded') {
            await reload();
            break;
          }
          if (outcome === 'children') {
            // Let the children (and decisions) advance the run while this job waits; BullMQ
            // re-enters it once the last child finished, and that activation continues the run.
            await this.releaseBeforeChildren(lease);
            if (token === undefined) return 'delegated';
            if (await job.moveToWaitingChildren(token)) throw waitingChildren();
            // Every child finished before we got here: nobody re-enters this job, so it goes on.
            return 'again';
          }
          return 'delegated';
        }
      }
    }
  }

  /**
   * One round per job: the next round is a new job, so runs interleave fairly. That job sees
   * whatever anyone asked for meanwhile: no wake-up of our own. The successor shares a job with
   * other producers at its version unless `unique` or that is this job's own version (this job
   * still holds that deduplication id).
   */
  private async handOn(
    run: StagedCommits,
    lease: Lease,
    jobVersion: number,
    unique: boolean,
  ): Promise<StepOutcome | 'again'> {
    await run.flush();
    const state = run.state;
    if (!state) return 'missing';
    await lease.release();
    await this.deps.queues.enqueueStep(
      state.checkpoint.identity,
      'continue',
      state.version,
      unique || state.version === jobVersion,
    );
    return 'continued';
  }

  /**
   * Releases the lease of a job about to wait for its tool children. A pending mark left by one
   * of those children needs no wake-up (its result is in the mailbox; a later child or this job's
   * re-entry applies it); anything else someone asked for (a decision to replay, a cancel) does.
   */
  private async releaseBeforeChildren(lease: Lease): Promise<void> {
    const { deps } = this;
    // Calls still executing drive the run (their results, then this job's re-entry).
    await releaseOrWake(deps, lease, ({ checkpoint: cp }) => {
      const engine = deps.registry.engine(cp.identity.agent);
      const running = Object.values(cp.calls).some((c) => c.status === 'running');
      return !(engine && running && engine.plan(cp).kind === 'execute');
    });
  }
}

/**
 * BullMQ's signal that a job waits for its children, thrown by every step job that fans out:
 * nobody reads its stack, whose capture showed up in the worker's CPU profile.
 */
function waitingChildren(): WaitingChildrenError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new WaitingChildrenError();
  } finally {
    Error.stackTraceLimit = limit;
  }
}
