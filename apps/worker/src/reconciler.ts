import { RunDoneError, activityOf, runCommands } from '@baton/core';
import { Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import { type RedisClient, type RunWaits } from '@baton/runtime';
import {
  SCHEDULE_QUEUE,
  WEBHOOK_QUEUE,
  type BatonKeys,
  type BatonQueues,
  type ChildRuns,
  type RedisRunStore,
  type RunCommitter,
  type RunMeta,
  type RunIndex,
  type RunAdmission,
  failedJobsKey,
  NewerFormatError,
  withSingletonLock,
} from '@baton/runtime/internal';
import { keepFailedJob } from './job-failures.ts';

/** Batches of the expiry index one scan works through at most (see collect). */
const MAX_COLLECT_BATCHES = 100;

export interface ReconcilerDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly queues: BatonQueues;
  readonly committer: RunCommitter;
  /** Fairness: runs parked in a backlog get no job; slots of finished runs are given back. */
  readonly admission?: RunAdmission;
  /** Agent-as-tool: a parent whose agent calls run as child runs is driven by them. */
  readonly children?: ChildRuns;
  /**
   * Event waits: waiting runs' waiters are re-registered each scan (a worker may have died
   * between a commit and its registration), and the previous release's leftover timeouts drained.
   */
  readonly waits?: Pick<RunWaits, 'drainLegacyTimeouts' | 'registerWaiting'>;
  readonly logger: Logger;
  readonly now: () => number;
  /** A run untouched for this long is checked for a live lease or job. */
  readonly staleAfterMs: number;
  /** Entries looked at per index per scan (bounds the work of one scan). */
  readonly batch?: number;
  /** A run that waits for a decision longer than this ends with an error (0 = never). */
  readonly maxWaitMs?: number;
  /** How long one scan may keep the cluster-wide scan lock. */
  readonly lockMs?: number;
  /**
   * Finished jobs are cleaned from the queues at most this often (default: every scan): every
   * shard's clean costs a few scripts even when there is nothing to remove.
   */
  readonly cleanEveryMs?: number;
}

export interface ScanReport {
  /** Runs given a fresh pass (they had work, no lease and no live job). */
  readonly rescheduled: string[];
  /** Idle runs moved out of the active index. */
  readonly parked: number;
  /** Runs found needing work in the waiting index (moved to the active one). */
  readonly revived: number;
  /** Runs ended because they waited longer than maxWaitMs. */
  readonly expired: string[];
  /** Finished runs whose keys expired and were dropped from the tenant and thread indexes. */
  readonly collected: number;
  /** Failed jobs of finished (or gone) runs removed, that their worker had not dealt with. */
  readonly failedRemoved: number;
  /** Finished BullMQ jobs past JOB_RETENTION_SECONDS removed from the queues. */
  readonly cleanedJobs: number;
}

/**
 * Keeps every unfinished run moving, in bounded work per scan whatever the number of runs:
 *
 * - The active index holds runs that should be moving. Each scan takes the `batch` entries
 *   untouched for longest (older than staleAfterMs) and, for each, either removes it (finished,
 *   or idle: moved to the waiting index) or touches it and makes sure something drives it: its
 *   lease is held, or a live job exists (the step job of its current version, or a tool job of
 *   a running call; the job's state is asked, an id that exists is not enough), or else a fresh
 *   pass is scheduled. Every entry visited moves to the back, so successive scans cover the
 *   whole index.
 * - The waiting index holds idle runs; they need nothing, so it is swept with a cursor (ZSCAN) a
 *   batch per scan: a run that has work after all (a crash between a commit and its index update)
 *   goes back to the active index, and one that waited past maxWaitMs is ended with an error.
 * - The expiry index drops finished runs from the tenant and thread indexes once their keys are
 *   gone, and finished jobs past their retention are cleaned from the queues.
 *
 * One worker scans at a time (a lock with a TTL); a pass on a healthy run is a no-op, so being
 * wrong costs one cheap job, never a duplicate effect.
 */
export class Reconciler {
  private readonly deps: ReconcilerDeps;
  /** Every index write of the scans below (run-index.ts states their ordering rule). */
  private readonly index: RunIndex;
  private readonly batch: number;
  private lastClean = -Infinity;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.index = deps.store.index;
    this.batch = deps.batch ?? 200;
  }

  /** One scan (skipped, with an empty report, while another worker is scanning). */
  async scan(): Promise<ScanReport> {
    const { redis, keys } = this.deps;
    const lock = { key: keys.reconcilerLock, ttlMs: this.deps.lockMs ?? 30_000 };
    const run = await withSingletonLock(redis, lock, () => this.scanHeld());
    if (run.acquired) return run.value;
    return {
      rescheduled: [],
      parked: 0,
      revived: 0,
      expired: [],
      collected: 0,
      failedRemoved: 0,
      cleanedJobs: 0,
    };
  }

  /** The scan, under the lock. */
  private async scanHeld(): Promise<ScanReport> {
    const { redis, keys } = this.deps;
    const active = await this.scanActive();
    const waiting = await this.sweepWaiting();
    const timedOut = await this.drainLegacyTimeouts();
    if (timedOut > 0)
      this.deps.logger.info({ timedOut }, "the previous release's event waits timed out");
    const fairness = await this.deps.admission?.sweep(this.batch);
    if (fairness && fairness.released > 0)
      this.deps.logger.info(fairness, 'fairness slots of finished or waiting runs given back');
    const agents = await redis.hkeys(keys.agentsKey());
    const queues = await this.deps.queues.listQueues(agents);
    const collected = await this.collect();
    let cleanedJobs = 0;
    if (this.deps.now() - this.lastClean >= (this.deps.cleanEveryMs ?? 0)) {
      this.lastClean = this.deps.now();
      cleanedJobs = await this.cleanJobs(queues);
    }
    const failedRemoved = await this.sweepFailed(queues);
    const report = { ...active, ...waiting, collected, failedRemoved, cleanedJobs };
    if (report.rescheduled.length + report.revived + report.expired.length > 0)
      this.deps.logger.info(
        {
          rescheduled: report.rescheduled.length,
          revived: report.revived,
          expired: report.expired.length,
        },
        'reconciler acted',
      );
    return report;
  }

  private async scanActive(): Promise<{ rescheduled: string[]; parked: number }> {
    const { store, queues } = this.deps;
    const now = this.deps.now();
    const due = await this.index.staleActive(now - this.deps.staleAfterMs, this.batch);
    const rescheduled: string[] = [];
    let parked = 0;
    for (const runId of due) {
      try {
        const meta = await store.meta(runId);
        if (!meta) {
          await this.index.remove('active', runId);
          continue;
        }
        if (meta.status === 'done') {
          await this.finish(runId);
          continue;
        }
        if (await this.isIdle(runId, meta)) {
          await this.index.move('waiting', runId, now);
          parked += 1;
          continue;
        }
        // Touched first: whatever happens next, this entry goes to the back of the scan order.
        await this.index.add('active', runId, now);
        if (await this.deps.store.bookkeeping.leaseHeld(runId)) continue;
        if (await this.hasLiveJob(runId, meta)) continue;
        // Waiting for a slot of its tenant or fairness key: it holds no job until admitted.
        if (await this.deps.admission?.isParked(meta.tenantId, runId)) continue;
        await queues.enqueueStep(
          {
            runId,
            tenantId: meta.tenantId,
            agent: meta.agent,
            agentVersion: meta.agentVersion,
            priority: meta.priority,
          },
          'reconcile',
          meta.version,
          true,
        );
        // Its lost job may be waiting in another task queue's queue that nobody serves.
        const strays = await queues.removeStrayStepJobs(
          runId,
          meta.agent,
          meta.version,
          meta.agentVersion,
        );
        if (strays > 0)
          this.deps.logger.info(
            { runId, agent: meta.agent, removed: strays },
            "a run's step job waiting in another task queue was removed; it runs on its agent's",
          );
        rescheduled.push(runId);
      } catch (error) {
        // A run a newer release wrote in a format this one does not read: its workers see to
        // it; this scan goes on past it (touched: to the back of the scan order).
        if (!NewerFormatError.isInstance(error)) throw error;
        await this.index.add('active', runId, now);
      }
    }
    return { rescheduled, parked };
  }

  private async sweepWaiting(): Promise<{ revived: number; expired: string[] }> {
    const { redis, keys, store } = this.deps;
    const cursorKey = keys.reconcilerWaitingCursor;
    const cursor = (await redis.get(cursorKey)) ?? '0';
    const [nextCursor, flat] = await redis.zscan(keys.waitingRuns, cursor, 'COUNT', this.batch);
    await redis.set(cursorKey, nextCursor, 'EX', 86_400);
    const now = this.deps.now();
    let revived = 0;
    const expired: string[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const runId = flat[i] as string;
      const since = Number(flat[i + 1]);
      const meta = await store.meta(runId);
      if (!meta) {
        await this.index.remove('waiting', runId);
        continue;
      }
      if (meta.status === 'done') {
        await this.finish(runId);
        continue;
      }
      if (!(await this.isIdle(runId, meta))) {
        // Immediately due for the active scan.
        await this.index.move('active', runId, now - this.deps.staleAfterMs);
        revived += 1;
        continue;
      }
      const maxWait = this.deps.maxWaitMs ?? 0;
      if (maxWait > 0 && meta.activity === 'waiting' && now - since > maxWait) {
        if (await this.expireWait(runId, maxWait)) expired.push(runId);
      } else if (meta.activity === 'waiting') await this.reregisterWaits(runId);
    }
    return { revived, expired };
  }

  /**
   * The event-wait timeouts the previous release wrote to `p:waits:timeouts` (this release
   * schedules them as call deadlines in the timer index), batch after batch while batches come
   * full. Remove one release after the timer index unification.
   */
  private async drainLegacyTimeouts(): Promise<number> {
    const { waits } = this.deps;
    if (!waits) return 0;
    let fired = 0;
    for (let round = 0; round < MAX_COLLECT_BATCHES; round += 1) {
      const { settled, fired: n } = await waits.drainLegacyTimeouts(this.batch);
      fired += n;
      if (settled < this.batch) break;
    }
    return fired;
  }

  /**
   * Registers the event waiters of a waiting run again (idempotent): the commit that made it
   * wait is durable, its registration (after the commit, in another slot) may not be.
   */
  private async reregisterWaits(runId: string): Promise<void> {
    const { waits } = this.deps;
    if (!waits) return;
    try {
      const loaded = await this.deps.store.load(runId);
      if (loaded && activityOf(loaded.checkpoint) === 'waiting')
        await waits.registerWaiting(loaded.checkpoint);
    } catch (err) {
      // A newer release's format, or Redis trouble: the next scan tries again.
      this.deps.logger.warn(
        { err, runId },
        "a waiting run's event waits could not be re-registered",
      );
    }
  }

  /** Ends a run that waited too long for a decision; false when it moved on meanwhile. */
  private async expireWait(runId: string, maxWaitMs: number): Promise<boolean> {
    const loaded = await this.deps.store.load(runId);
    if (!loaded || activityOf(loaded.checkpoint) !== 'waiting') return false;
    // A call with a deadline still to come decides the wait itself (a long sleep, a deadline
    // beyond RUN_MAX_WAIT_SECONDS): its timer ends it, not this.
    const now = this.deps.now();
    const timed = Object.values(loaded.checkpoint.calls).some(
      (c) => c.status === 'suspended' && (c.ticket?.deadline?.at ?? 0) > now,
    );
    if (timed) return false;
    const seconds = Math.round(maxWaitMs / 1000);
    const message = `no decision arrived within ${String(seconds)} s (RUN_MAX_WAIT_SECONDS); the run was ended`;
    try {
      // Null: a decision (or a cancel) moved the run on meanwhile; it is no longer waiting.
      const committed = await this.deps.committer.commitCommand(loaded, (cp) =>
        activityOf(cp) === 'waiting' ? runCommands.fail(cp, message, this.deps.now()) : null,
      );
      return committed !== null;
    } catch (error) {
      // The store's own refusal: the run finished between the load and the write.
      if (RunDoneError.isInstance(error)) return false;
      throw error;
    }
  }

  /**
   * Batch after batch until no due entry is left (bounded per scan): one batch per scan would
   * take hours to drop the index entries of a large burst after its retention.
   */
  private async collect(): Promise<number> {
    let collected = 0;
    for (let round = 0; round < MAX_COLLECT_BATCHES; round += 1) {
      const { due, dropped } = await this.collectBatch();
      collected += dropped;
      if (due < this.batch) break;
    }
    return collected;
  }

  private async collectBatch(): Promise<{ due: number; dropped: number }> {
    const now = this.deps.now();
    const due = await this.index.dueExpiring(now, this.batch);
    let dropped = 0;
    for (const member of due) {
      const [tenantId, threadId, runId] = JSON.parse(member) as [string, string, string];
      const ttl = await this.deps.store.bookkeeping.expiresInMs(runId);
      if (ttl > 0) {
        // Still there (retention grew, or a clock skew): look again when it is due.
        await this.index.expireAt(member, now + ttl);
        continue;
      }
      if (ttl === -1) {
        // The key exists without expiry: not a finished run any more; nothing to collect.
        await this.index.forgetExpiring(member);
        continue;
      }
      await this.index.dropEverywhere(tenantId, threadId, runId);
      await this.index.forgetExpiring(member);
      dropped += 1;
    }
    return { due: due.length, dropped };
  }

  /**
   * Every finished job past its retention, not a batch: a burst leaves tens of thousands, and
   * nothing else removes them once no job finishes (see BatonQueues.cleanFinished).
   */
  private async cleanJobs(runQueues: readonly Queue[]): Promise<number> {
    const { queues } = this.deps;
    return queues.cleanFinished([
      ...runQueues,
      queues.queue(SCHEDULE_QUEUE),
      queues.queue(WEBHOOK_QUEUE),
    ]);
  }

  /**
   * Every failed job is kept with its run or, the run being finished, removed (keepFailedJob):
   * its worker's `failed` handler does it, unless that worker died first. So each failed job is
   * looked at once more here (every shard of every task queue, and the queues of earlier
   * layouts), in the order they failed, a batch per queue per scan, once it is
   * older than staleAfterMs (a clock skew between workers below that cannot hide one behind the
   * cursor). Looking twice is harmless.
   */
  private async sweepFailed(runQueues: readonly Queue[]): Promise<number> {
    const { redis, keys } = this.deps;
    const upTo = this.deps.now() - this.deps.staleAfterMs;
    let removed = 0;
    const cursors = await redis.hgetall(keys.reconcilerFailedCursor);
    for (const queue of runQueues) {
      const from = Number(cursors[queue.name] ?? 0);
      const flat = await redis.zrangebyscore(
        failedJobsKey(queue),
        from,
        upTo,
        'WITHSCORES',
        'LIMIT',
        0,
        this.batch,
      );
      if (flat.length === 0) continue;
      let last = from;
      for (let i = 0; i < flat.length; i += 2) {
        const jobId = flat[i] as string;
        last = Number(flat[i + 1]);
        const job = await Job.fromId(queue, jobId);
        const runId = (job?.data as { runId?: unknown } | undefined)?.runId;
        if (typeof runId !== 'string') continue;
        if (!(await keepFailedJob(this.deps, queue.name, jobId, runId))) removed += 1;
      }
      // A full page of one failure time would be read again and again: step past it.
      const next = flat.length / 2 === this.batch && last === from ? last + 1 : last;
      await redis.hset(keys.reconcilerFailedCursor, queue.name, String(next));
      await redis.expire(keys.reconcilerFailedCursor, 86_400);
    }
    return removed;
  }

  /** Whatever a finished run still owes (thread release, indexes, failed jobs); idempotent. */
  private async finish(runId: string): Promise<void> {
    const loaded = await this.deps.store.load(runId);
    if (loaded) await this.deps.committer.finished(loaded.checkpoint);
    else await this.index.remove('active', runId);
  }

  /**
   * Idle: waiting for a decision (core's activityOf, stored with every commit), or created and
   * queued behind another run of its thread (promoted when that run releases the thread).
   */
  private async isIdle(runId: string, meta: RunMeta): Promise<boolean> {
    if (meta.activity === 'waiting') return true;
    if (meta.status !== 'created') return false;
    const thread = this.deps.keys.thread(meta.tenantId, meta.threadId);
    const [active, queued] = await Promise.all([
      this.deps.redis.hget(thread.meta, 'activeRunId'),
      this.deps.redis.lpos(thread.queue, runId),
    ]);
    return active !== runId && queued !== null;
  }

  /**
   * Something will drive the run: the job that last held its lease is still alive (a job whose
   * worker died goes back to wait and is redelivered), a step job for its current version is
   * queued, or a tool job of one of its running calls is.
   */
  private async hasLiveJob(runId: string, meta: RunMeta): Promise<boolean> {
    const { queues, store } = this.deps;
    if (meta.driver !== '' && (await queues.isLive(meta.driver))) return true;
    if ((await queues.liveStepJob(runId, meta.agent, meta.version, meta.agentVersion)) !== null)
      return true;
    const loaded = await store.load(runId);
    if (!loaded) return false;
    const { checkpoint: cp } = loaded;
    for (const id of cp.round) {
      const call = cp.calls[id];
      if (
        call?.status === 'running' &&
        (await queues.liveToolJob(meta.agent, runId, call.id, call.attempt, meta.agentVersion))
      )
        return true;
    }
    return (await this.deps.children?.drive(cp)) ?? false;
  }
}
