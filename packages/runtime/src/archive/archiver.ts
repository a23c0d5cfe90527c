import type { ArchivedRun, RunArchive } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import type { Logger } from 'pino';
import type { BatonKeys } from '../redis/keys.ts';
import type { RedisRunStore } from '../run-record/redis-run-store.ts';
import type { RedisClient } from '../redis/scripts.ts';
import { withSingletonLock } from '../redis/singleton-lock.ts';
import type { RedisThreadStore } from '../redis/thread-store.ts';
import { expiringMember, type RunIndex } from '../run-record/run-index.ts';

export interface ArchiverDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly archive: RunArchive;
  readonly logger: Logger;
  readonly now: () => number;
  /** EVENT_RETENTION_SECONDS: how long an archived run's keys stay in Redis (hot reads). */
  readonly retentionSeconds: number;
  /** ARCHIVE_BATCH: runs per archive transaction. */
  readonly batch: number;
}

/** What one pump did; null when another process holds the archiver's lock. */
export interface ArchivePass {
  readonly archived: number;
  /** Pending runs whose keys were gone (deleted, or expired before the archive had them). */
  readonly dropped: number;
  /** Pending runs after this pass, and how long the oldest of them has waited (ms). */
  readonly pending: number;
  readonly lagMs: number;
}

/**
 * Copies finished runs into the archive, driven by their final commit as the webhook outbox is:
 *
 * - `mark` is one of the duties of a finished run (RunCommitter.finished, repeated by the
 *   reconciler for a run whose worker died before it was done with them), so every finished run
 *   is in `p:archive:pending` before it leaves the live indexes. Its keys then live
 *   ARCHIVE_HOLD_SECONDS, long enough to wait out an archive outage.
 * - `pump` (one process at a time, under a lock) reads a batch of pending runs from Redis, writes
 *   them in one PostgreSQL transaction (idempotent: ON CONFLICT DO NOTHING by run id and seq),
 *   and only then gives their Redis keys EVENT_RETENTION_SECONDS and takes them off the list.
 *   A crash or a PostgreSQL error anywhere in between leaves them pending: the next pass writes
 *   them again and the archive keeps the first copy. Nothing is lost, nothing is doubled.
 */
export class Archiver {
  /** Test hook (worker probes): called after a batch is in the archive, before Redis lets go. */
  probe?: (point: string, info: Record<string, unknown>) => void | Promise<void>;
  private readonly deps: ArchiverDeps;
  private readonly index: RunIndex;

  constructor(deps: ArchiverDeps) {
    this.deps = deps;
    this.index = deps.store.index;
  }

  /** A finished run joins the archive's list (idempotent: its first score is kept). */
  async mark(cp: Checkpoint): Promise<void> {
    const at = cp.finishedAt ?? this.deps.now();
    await this.deps.redis.zadd(this.deps.keys.archivePending, 'NX', at, cp.identity.runId);
  }

  /** How many finished runs wait for the archive, and the oldest one's wait (ms, 0 when none). */
  async lag(): Promise<{ readonly pending: number; readonly lagMs: number }> {
    const key = this.deps.keys.archivePending;
    const [pending, oldest] = await Promise.all([
      this.deps.redis.zcard(key),
      this.deps.redis.zrange(key, '0', '0', 'WITHSCORES'),
    ]);
    const since = oldest[1] === undefined ? null : Number(oldest[1]);
    return { pending, lagMs: since === null ? 0 : Math.max(0, this.deps.now() - since) };
  }

  /**
   * One batch (see the class); null when another process is archiving. The lock of a process
   * that died lapses after `lockMs`; one that outlives it only costs a batch written twice,
   * which the archive keeps once.
   */
  async pump(lockMs = 15_000): Promise<ArchivePass | null> {
    const { redis, keys } = this.deps;
    const run = await withSingletonLock(redis, { key: keys.archiveLock, ttlMs: lockMs }, () =>
      this.pass(),
    );
    return run.acquired ? run.value : null;
  }

  private async pass(): Promise<ArchivePass> {
    const { redis, keys, store, archive } = this.deps;
    const ids = await redis.zrange(keys.archivePending, '0', String(this.deps.batch - 1));
    if (ids.length === 0) return { archived: 0, dropped: 0, pending: 0, lagMs: 0 };
    const read = await Promise.all(ids.map((runId) => this.read(runId)));
    const runs = read.filter((r): r is ArchivedRun => r !== null);
    const gone = ids.filter((_, i) => read[i] === null);
    await archive.putRuns(runs);
    if (runs.length > 0) await this.probe?.('archive-written', { runs: runs.length });
    // The archive has them: Redis may let them go after the (short) retention.
    const at = this.deps.now();
    await Promise.all(
      runs.map(async ({ checkpoint }) => {
        const runId = checkpoint.identity.runId;
        // Webhook keys whose outbox is done with them (they have a TTL) go with the run.
        await store.bookkeeping.expireArchived(runId, this.deps.retentionSeconds);
        await this.index.expireAt(
          expiringMember(checkpoint),
          at + this.deps.retentionSeconds * 1000,
        );
      }),
    );
    await redis.zrem(keys.archivePending, ...ids);
    if (gone.length > 0)
      this.deps.logger.info(
        { runIds: gone },
        'archive: pending runs no longer in Redis (deleted, or past ARCHIVE_HOLD_SECONDS)',
      );
    const { pending, lagMs } = await this.lag();
    return { archived: runs.length, dropped: gone.length, pending, lagMs };
  }

  /** A pending run as the archive takes it; null when its keys are gone. */
  private async read(runId: string): Promise<ArchivedRun | null> {
    const { store, threads } = this.deps;
    const stored = await store.load(runId);
    if (!stored) return null;
    const { checkpoint } = stored;
    if (checkpoint.status !== 'done') return null;
    const events = await store.readEvents(runId);
    const { tenantId, threadId } = checkpoint.identity;
    // The thread's state now (the run handed on its persistent keys); not its history, which
    // can be long.
    const thread = await threads.stateOf(tenantId, threadId);
    const threadState =
      thread.empty && Object.keys(thread.state).length === 0
        ? checkpoint.state.thread
        : thread.state;
    // A child run that inherited its parent's thread never held it: nothing of it is there.
    const parent = checkpoint.identity.parent;
    const addsToThread =
      parent === undefined || (await store.meta(parent.runId))?.threadId !== threadId;
    return { checkpoint, version: stored.version, events, threadState, addsToThread };
  }
}
