import { ToolJobSchema, type Checkpoint, type ToolExecutionResult } from '@baton/protocol';
import { executeTool, invocationFor, type Engine } from '@baton/core';
import { DelayedError, type Job } from 'bullmq';
import { failedToolJobResult } from './fan-out.ts';
import { leaseAndLoad, releaseOrWake } from './lease-release.ts';
import { LeaseLostError, isRedisUnavailable, type HolderNote } from '@baton/runtime/internal';
import type { WorkerDeps } from './worker-deps.ts';
import { toolWaitpoint } from './tool-waitpoint.ts';

type ToolOutcome = 'stale' | 'recorded' | 'aborted';

/** How long a tool job whose Redis writes failed waits before it is tried again. */
const REDIS_RETRY_MS = 1_000;

/** Results held by executedUnrecorded at most: the oldest is let go past it. */
const UNRECORDED_MAX = 10_000;

/**
 * One tool call of a parallel round. The result is recorded durably first (first writer wins,
 * so a redelivered job yields one result), then applied if the run's lease is free; otherwise
 * the lease holder applies it. Either way the step waiting for this child is not needed for
 * progress, only for the barrier.
 */

export class ToolProcessor {
  private readonly deps: WorkerDeps;
  /**
   * Results this process executed but could not record yet (Redis failed over or went away
   * between the tool's end and its record), by run, call and attempt. The job is retried once
   * Redis answers; the retry records this result instead of running the tool a second time. A
   * retry that another worker takes runs the tool again (at least once, docs/durability.md).
   */
  private readonly executedUnrecorded = new Map<string, ToolExecutionResult>();

  constructor(deps: WorkerDeps) {
    this.deps = deps;
  }

  /**
   * A Redis failure (down, a cluster failing over) is not the tool's: the job is tried again a
   * second later without using up one of the call's TOOL_ATTEMPTS, whose last would record the
   * failure as the call's result. A result already recorded is found, not run again (lookup).
   */
  async process(job: Job, note: HolderNote | null = null): Promise<ToolOutcome> {
    try {
      return await this.processOnce(job, note);
    } catch (error) {
      if (!isRedisUnavailable(error) || job.token === undefined) throw error;
      try {
        await job.moveToDelayed(Date.now() + REDIS_RETRY_MS, job.token);
      } catch {
        throw error; // Redis still refuses: an ordinary retry (BullMQ's backoff) then
      }
      this.deps.logger.warn(
        { err: error, jobId: job.id, queue: job.queueName },
        'tool job postponed: Redis unavailable',
      );
      throw new DelayedError();
    }
  }

  /** `note`: the attempt's holder note, written with the job's first read (see RunJobs). */
  private async processOnce(job: Job, note: HolderNote | null): Promise<ToolOutcome> {
    const data = ToolJobSchema.parse(job.data);
    const { deps } = this;
    const log = deps.logger.child({
      runId: data.runId,
      jobId: job.id,
      toolCallId: data.toolCallId,
      attempt: data.attempt,
    });
    // The result on record (a redelivered job) or the run, in one round trip. A job BullMQ
    // starts for the first time, never stalled, has recorded nothing yet: only the run is read.
    const firstStart =
      job.attemptsStarted <= 1 && job.attemptsMade === 0 && job.stalledCounter === 0;
    const found = await deps.mailbox.lookup(
      data.runId,
      data.toolCallId,
      data.attempt,
      firstStart,
      note ?? undefined,
    );
    let result: ToolExecutionResult | null = found.kind === 'recorded' ? found.result : null;
    let ranHere = false;
    if (found.kind === 'run') {
      // Its messages are not read: a tool runs from its call, the identity and the state.
      const stored = deps.store.decodeStored(data.runId, found.data, found.version, []);
      const call = stored?.checkpoint.calls[data.toolCallId];
      if (
        !stored ||
        !call ||
        call.attempt !== data.attempt ||
        call.status !== 'running' ||
        stored.checkpoint.cancelRequested
      ) {
        log.debug('tool job is stale (call moved on); nothing to do');
        // A result held for this attempt is never recorded now: let it go instead of keeping it
        // until UNRECORDED_MAX pushes it out.
        this.executedUnrecorded.delete(unrecordedKey(data));
        return 'stale';
      }
      const held = this.executedUnrecorded.get(unrecordedKey(data));
      if (held) {
        log.info('tool result executed before a Redis failure: recorded now, not run again');
        await this.apply(
          data.runId,
          `${job.queueName}:${job.id ?? ''}`,
          job.parentKey !== undefined,
          held,
        );
        this.executedUnrecorded.delete(unrecordedKey(data));
        return 'recorded';
      }
      const engine = deps.registry.engine(stored.checkpoint.identity.agent);
      const invocation = invocationFor({ cp: stored.checkpoint }, call);
      const tracked = deps.aborts.track(data.runId);
      try {
        await deps.probe?.('before-tool', {
          runId: data.runId,
          toolCallId: data.toolCallId,
          attempt: data.attempt,
          idempotencyKey: invocation.idempotencyKey,
          inline: false,
        });
        result = await executeTool(engine?.ctx.tools.get(call.name), invocation, {
          identity: stored.checkpoint.identity,
          state: stored.checkpoint.state,
          signal: tracked.signal,
          ...toolWaitpoint(deps, stored.checkpoint.identity, call.id),
          now: () => deps.clock.now(),
          sleep: (ms, signal) => deps.clock.sleep(ms, signal),
        });
      } catch (error) {
        if (tracked.signal.aborted) {
          const fresh = await deps.store.load(data.runId);
          if (!fresh?.checkpoint.cancelRequested)
            throw new Error('tool aborted: worker shutting down', { cause: error });
          log.info('tool aborted by cancellation');
          return 'aborted';
        }
        // executeTool turns the tool's own errors into results; what reaches here is Baton's
        // (Redis, a probe): retried, and on the last attempt the call's result says so.
        if (job.attemptsMade + 1 < (job.opts.attempts ?? 1)) throw error;
        result = failedToolJobResult(
          { toolCallId: data.toolCallId, toolName: call.name, attempt: data.attempt },
          (error as Error).message,
          job.stalledCounter,
          deps.clock.now(),
        );
      } finally {
        tracked.done();
      }
      ranHere = true;
      if (result) this.holdUnrecorded(unrecordedKey(data), result);
    } else this.executedUnrecorded.delete(unrecordedKey(data));
    await this.apply(
      data.runId,
      `${job.queueName}:${job.id ?? ''}`,
      job.parentKey !== undefined,
      ranHere ? result : null,
    );
    this.executedUnrecorded.delete(unrecordedKey(data));
    return 'recorded';
  }

  private holdUnrecorded(key: string, result: ToolExecutionResult): void {
    this.executedUnrecorded.set(key, result);
    if (this.executedUnrecorded.size <= UNRECORDED_MAX) return;
    const oldest = this.executedUnrecorded.keys().next();
    if (!oldest.done) this.executedUnrecorded.delete(oldest.value);
  }

  /**
   * Applies recorded results now when nobody else is advancing the run. `parented`: this job is
   * a child of a step job that BullMQ re-enters once its last child finishes; when the round is
   * over, that re-entry carries the run on, so scheduling a step here would only race with it.
   */
  private async apply(
    runId: string,
    driver: string,
    parented: boolean,
    toRecord: ToolExecutionResult | null,
  ): Promise<void> {
    const { deps } = this;
    // Our result is recorded (first writer wins) in the same round trip as the lease is tried.
    // A child job whose result completes the round takes nothing: the parent step job, which
    // BullMQ re-enters once this job finished, applies the round's results with its next round
    // in one commit (applying them here would be a commit of its own for the same events).
    const { acquired, deferred } = await leaseAndLoad(
      deps,
      runId,
      driver,
      toRecord ? { ...deps.mailbox.recordFirst(toRecord), deferIfComplete: parented } : undefined,
    );
    if (toRecord)
      await deps.probe?.('after-tool-recorded', { runId, toolCallId: toRecord.toolCallId });
    if (deferred) return;
    if (!acquired) return; // the holder sees the pending mark and applies our result
    const { lease } = acquired;
    let awaited = acquired.awaited;
    try {
      let state = acquired.state;
      for (;;) {
        if (!state) return;
        const engine = deps.registry.engine(state.checkpoint.identity.agent);
        if (!engine) return;
        // What the acquire read describes the loaded state at that moment only: used once.
        const results = await deps.mailbox.pendingFor(
          state.checkpoint,
          state === acquired.state ? awaited : null,
        );
        awaited = null;
        if (results.length > 0) {
          const t = engine.applyToolResults(state.checkpoint, results, deps.clock.now());
          // When the new state leaves nothing for this job to do, the commit releases the lease.
          const idle = this.leavesNothingToDo(engine, t.checkpoint, parented);
          const committed = await deps.committer.commitFenced(state, t, {
            lease,
            registry: engine.ctx.registry,
            releaseIfIdle: idle,
          });
          if (committed?.released === true) return;
          // A conflict: look at the fresh checkpoint (its own pending results) instead.
          state = committed && !idle ? committed : await deps.committer.load(runId);
          continue;
        }
        if (!this.leavesNothingToDo(engine, state.checkpoint, parented)) {
          await deps.queues.enqueueStep(state.checkpoint.identity, 'continue', state.version);
          return;
        }
        // Another result may have landed while we held the lease: look again before leaving.
        if (await lease.releaseIfIdle()) return;
        state = await deps.committer.load(runId);
      }
    } catch (error) {
      // Another worker owns the run now; it applies what is in the mailbox.
      if (!LeaseLostError.isInstance(error)) throw error;
      deps.logger.warn({ runId }, 'lease lost while applying tool results');
    } finally {
      await releaseOrWake(deps, lease);
    }
  }

  /**
   * Whether a run in this state needs no step job from us: it waits or is done, calls still
   * executing elsewhere drive it, or (`parented`) the round is over and the step job waiting for
   * this job is re-entered by BullMQ once its last child finished, and carries the run on.
   */
  private leavesNothingToDo(engine: Engine, cp: Checkpoint, parented: boolean): boolean {
    const next = engine.plan(cp).kind;
    const stillRunning = Object.values(cp.calls).some((c) => c.status === 'running');
    return (
      next === 'wait' ||
      next === 'done' ||
      (next === 'execute' && stillRunning) ||
      (parented && !stillRunning)
    );
  }
}

/** One attempt of one call of one run. */
function unrecordedKey(data: { runId: string; toolCallId: string; attempt: number }): string {
  return `${data.runId}\u0000${data.toolCallId}\u0000${String(data.attempt)}`;
}
