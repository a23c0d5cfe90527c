import type { Checkpoint, EventBody } from '@baton/protocol';
import {
  RunDoneError,
  VersionConflictError,
  activityOf,
  persistentThreadState,
  type KeyRegistry,
  type Transition,
} from '@baton/core';
import type { Logger } from 'pino';
import type { BatonQueues } from './queues.ts';
import type { RunAdmission } from './fairness/run-admission.ts';
import {
  LeaseLostError,
  type CommitOptions,
  type RedisRunStore,
} from './run-record/redis-run-store.ts';
import type { RedisThreadStore } from './redis/thread-store.ts';
import type { RedisClient } from './redis/scripts.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { Lease } from './run-record/run-lease.ts';
import { expiringMember, type RunIndex } from './run-record/run-index.ts';
import { RunStarts } from './run-starts.ts';
import { deadlineChanges } from './timers/deadline-timers.ts';
import type { TimerIndex } from './timers/timer-index.ts';

export interface Loaded {
  checkpoint: Checkpoint;
  version: number;
}

export type Committed = Loaded & { transition: Transition };

export interface CommitterDeps {
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly now: () => number;
  readonly logger: Logger;
  /** Seconds a finished run's keys live (the store's retention). */
  readonly retentionSeconds: number;
  /**
   * Fairness admission (docs/fairness.md): a run that finishes or starts waiting for a human
   * gives its slot back, a run promoted on its thread asks for one. Absent: no admission.
   */
  readonly admission?: RunAdmission;
  /**
   * The timer index: the deadlines (and durable sleeps) of a commit's suspended calls are
   * scheduled before it and cancelled after the commit that ends their wait. Absent: none kept.
   */
  readonly timers?: TimerIndex;
  /**
   * A commit left the run waiting: its event waits are indexed (RunWaits.registerWaiting).
   * Idempotent; a crash before it leaves those calls to their run's RUN_MAX_WAIT_SECONDS.
   */
  readonly onWaiting?: (cp: Checkpoint) => Promise<void>;
  /** What every finished run owes beyond its keys (finished-duties.ts); idempotent like the rest. */
  readonly onFinished?: (cp: Checkpoint) => Promise<void>;
  /**
   * Told about every commit's events once its index duties are done (webhooks' outbox);
   * `webhook` is whether the run has a webhook configuration, when the commit could tell (the
   * one that finishes the run reads it).
   */
  readonly afterCommitHook?: (
    runId: string,
    events: readonly EventBody[],
    known?: { readonly webhook: boolean },
  ) => Promise<void>;
}

/**
 * How a commit is made, besides the transition: one object from the worker's staged commits
 * through the committer to the store (whose CommitOptions it derives: `fence` and
 * `releaseTtlMs` from the lease, `base` from the state committed over).
 */
export interface RunCommitOptions extends Pick<CommitOptions, 'parentRecord'> {
  /** The run's agent's keys: what of the thread state a finished run hands on. */
  readonly registry?: KeyRegistry | undefined;
  /** The writer's lease: the write is fenced on it. Absent: a control-plane write. */
  readonly lease?: Lease | undefined;
  /**
   * With `lease`: the same write releases it unless someone asked for the run meanwhile
   * (`released` says which; false: the lease is still held, look at the run again).
   */
  readonly releaseIfIdle?: boolean | undefined;
}

/** A worker's commit: under its lease (see RunCommitter.commitFenced). */
export interface FencedCommitOptions extends RunCommitOptions {
  readonly lease: Lease;
}

/**
 * Commits transitions, and keeps the global run indexes and the thread in step with them.
 *
 * Two kinds of writers, two rules:
 * - A worker commits under its lease (`commitFenced`): one attempt, fenced on the lease token.
 *   A version conflict means someone else (a decision, a cancel request) wrote the run meanwhile;
 *   the transition was computed from what is now stale state, so it is dropped and the caller
 *   re-plans from a fresh load. It is never re-applied to the fresh checkpoint.
 * - The control plane (decisions, cancel requests) commits a command computed from its own input
 *   (`commitCommand`): on a conflict the command is recomputed against the fresh checkpoint, which
 *   is what a CAS retry loop is for.
 *
 * Index order makes every crash window harmless: a run is added to the active index before the
 * commit that gives it work and removed from it after the commit that leaves it idle, so at worst
 * the reconciler looks at a run that needs nothing.
 */
export class RunCommitter {
  private readonly deps: CommitterDeps;
  private readonly index: RunIndex;
  /** A run promoted on its thread starts by the one "admit or enqueue" rule. */
  private readonly starts: RunStarts;

  constructor(deps: CommitterDeps) {
    this.deps = deps;
    this.index = deps.store.index;
    this.starts = new RunStarts(deps.queues, deps.admission);
  }

  async load(runId: string): Promise<Loaded | null> {
    return this.deps.store.load(runId);
  }

  /** Null when the run moved on meanwhile (conflict, or done): reload and re-plan. */
  async commitFenced(
    current: Loaded,
    t: Transition,
    options: FencedCommitOptions,
  ): Promise<(Committed & { readonly released?: boolean }) | null> {
    const { lease } = options;
    lease.check();
    try {
      return await this.write(current, t, options);
    } catch (error) {
      if (VersionConflictError.isInstance(error) || RunDoneError.isInstance(error)) return null;
      if (LeaseLostError.isInstance(error)) lease.markLost('a commit was fenced');
      throw error;
    }
  }

  /**
   * A control-plane command: `compute` is re-run on the fresh checkpoint after a conflict. It
   * returns null when the command has nothing left to do on that checkpoint (the run moved on,
   * the decision was a duplicate): nothing is written and the commit answers null. It throws only
   * to refuse with an error meant for the caller.
   */
  async commitCommand(
    current: Loaded,
    compute: (cp: Checkpoint) => Transition | null,
    registry?: KeyRegistry,
  ): Promise<Committed | null> {
    let state = current;
    for (let attempt = 0; ; attempt += 1) {
      const t = compute(state.checkpoint);
      if (t === null) return null;
      const runId = state.checkpoint.identity.runId;
      // Before the commit that gives the run work, so a crash right after it cannot hide the run.
      if (activityOf(t.checkpoint) === 'active' && activityOf(state.checkpoint) !== 'active')
        await this.index.add('active', runId, this.deps.now());
      try {
        return await this.write(state, t, { registry });
      } catch (error) {
        if (!VersionConflictError.isInstance(error) || attempt >= 20) throw error;
        const fresh = await this.deps.store.load(runId);
        if (!fresh) throw error;
        state = fresh;
      }
    }
  }

  /** One compare-and-set commit of `t` over `current`, then the index and thread duties. */
  private async write(
    current: Loaded,
    t: Transition,
    options: RunCommitOptions,
  ): Promise<Committed & { readonly released?: boolean }> {
    const { lease, registry, releaseIfIdle = false, parentRecord } = options;
    const { timers } = this.deps;
    const deadlines = timers ? deadlineChanges(current.checkpoint, t.checkpoint) : null;
    // Before the commit: a crash after it cannot lose a deadline (one whose commit failed fires
    // for nothing: its handler finds no such deadline).
    if (timers && deadlines) await timers.schedule(deadlines.schedule);
    const { version, released, failedJobs, webhook } = await this.deps.store.commit(
      current.checkpoint.identity.runId,
      current.version,
      t.checkpoint,
      t.events,
      t.trigger,
      {
        fence: lease?.token ?? '',
        releaseTtlMs: lease && releaseIfIdle ? lease.ttlMs : undefined,
        base: current.checkpoint,
        parentRecord,
      },
    );
    if (lease && released !== undefined) lease.settle(released);
    if (timers && deadlines && deadlines.cancel.length > 0)
      // A timer left behind fires for nothing; it must not fail a commit that applied.
      await timers.cancel(deadlines.cancel).catch((err: unknown) => {
        this.deps.logger.warn({ err, runId: t.checkpoint.identity.runId }, 'timer cancel failed');
      });
    await this.afterCommit(current.checkpoint, t.checkpoint, registry, failedJobs);
    await this.deps.afterCommitHook?.(
      current.checkpoint.identity.runId,
      t.events,
      ...(webhook === undefined ? [] : [{ webhook }]),
    );
    return {
      checkpoint: t.checkpoint,
      version,
      transition: t,
      ...(released === undefined ? {} : { released }),
    };
  }

  private async afterCommit(
    before: Checkpoint,
    after: Checkpoint,
    registry?: KeyRegistry,
    failedJobs?: readonly string[],
  ): Promise<void> {
    const was = activityOf(before);
    const is = activityOf(after);
    if (was === is) return;
    const runId = after.identity.runId;
    if (is === 'active' || is === 'waiting') {
      await this.index.move(is, runId, this.deps.now());
      // A run waiting for a human holds no slot (whoever resumes it asks for one again).
      if (is === 'waiting') {
        await this.deps.admission?.waitingForHuman(after.identity);
        await this.deps.onWaiting?.(after);
      }
      await this.deps.queues.versions.track(after.identity, is);
    } else {
      // A run that finishes from active is in the waiting index only if a crash left it there
      // (a move adds before it removes), and the reconciler's waiting sweep finishes that entry.
      await this.finished(after, registry, failedJobs, was === 'waiting' ? 'both' : 'active');
    }
  }

  /**
   * Everything a finished run owes: its place in the expiry index, the thread's release (which
   * may start the next queued run), its failed jobs removed, and leaving the live indexes. Each
   * part is idempotent, so the reconciler repeats it for a run whose worker died half-way.
   */
  async finished(
    cp: Checkpoint,
    registry?: KeyRegistry,
    /** The run's failed jobs, when the final commit read them already. */
    failedJobs?: readonly string[],
    /** Which live indexes may list it: both unless the caller knows it was active. */
    live: 'both' | 'active' = 'both',
  ): Promise<void> {
    const runId = cp.identity.runId;
    // The thread first: the next turn of a conversation waits for it.
    await this.releaseThread(cp, registry);
    // Its slot goes to the next run of its tenant's backlogs (idempotent, as the rest).
    await this.deps.admission?.release(cp.identity);
    // Before the run leaves the live indexes: a crash here leaves it for the reconciler to redo.
    await this.deps.onFinished?.(cp);
    await this.deps.queues.versions.track(cp.identity, 'done', live === 'both');
    const expiresAt = (cp.finishedAt ?? this.deps.now()) + this.deps.retentionSeconds * 1000;
    await this.index.expireAt(expiringMember(cp), expiresAt);
    await this.deps.queues.removeFailedJobs(
      failedJobs ?? (await this.deps.store.bookkeeping.failedJobs(runId)),
    );
    if (live === 'both') await this.index.leaveLive(runId);
    else await this.index.remove('active', runId);
  }

  /** Idempotent: a second release of the same run appends nothing and promotes nobody. */
  async releaseThread(cp: Checkpoint, registry?: KeyRegistry): Promise<void> {
    const { identity } = cp;
    const threadState = registry ? persistentThreadState(registry, cp.state) : cp.state.thread;
    const promoted = await this.deps.threads.release(
      identity.tenantId,
      identity.threadId,
      identity.runId,
      cp.messages.slice(cp.historyLength),
      threadState,
    );
    if (promoted) {
      const next = await this.deps.store.load(promoted);
      if (next) {
        await this.index.move('active', promoted, this.deps.now());
        const { identity } = next.checkpoint;
        await this.starts.start(identity, 'start', next.version);
      }
      this.deps.logger.info(
        { runId: identity.runId, promoted },
        'thread released; next queued run started',
      );
    }
  }
}
