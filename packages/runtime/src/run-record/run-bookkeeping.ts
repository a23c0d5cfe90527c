import type { BatonKeys } from '../redis/keys.ts';
import { runDataKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';

/** A `{id, queue, step}` record of the step job waiting for a round's tool jobs lives this long. */
const PARENT_RECORD_TTL_MS = 86_400_000;

/** The fields a schedule's run list shows, in this order (HMGET of the run's `cp`). */
const SCHEDULED_RUN_FIELDS = [
  'tenant',
  'status',
  'agent',
  'threadId',
  'createdAt',
  'updatedAt',
  'aver',
] as const;

/**
 * The plain commands on a run's keys that the worker, the committer, the archiver and the
 * schedules send beside the run scripts: one named method each, so that every key of a run is
 * built and touched in this folder (README.md). Each is the single command (or the one MULTI) it
 * was where it came from: same Redis commands, same atomicity.
 */
export class RunBookkeeping {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Whether some job holds the run's lease right now (EXISTS `:lease`). */
  async leaseHeld(runId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.run(runId).lease)) === 1;
  }

  /**
   * Remembers a failed BullMQ job of the run (`<queue>:<jobId>` in `:failed`), removed by the
   * finished run's clean-up.
   */
  async rememberFailedJob(runId: string, entry: string): Promise<void> {
    await this.redis.sadd(this.keys.run(runId).failed, entry);
  }

  /** The run's failed jobs as rememberFailedJob listed them. */
  async failedJobs(runId: string): Promise<string[]> {
    return this.redis.smembers(this.keys.run(runId).failed);
  }

  /** The JSON `{id, queue, step}` of the step job waiting for the round's tool jobs, or null. */
  async parentRecord(runId: string): Promise<string | null> {
    return this.redis.get(this.keys.run(runId).parent);
  }

  /** Records the step job waiting for the round's tool jobs (what the commit records, later). */
  async recordParent(runId: string, record: string): Promise<void> {
    await this.redis.set(this.keys.run(runId).parent, record, 'PX', PARENT_RECORD_TTL_MS);
  }

  /**
   * Counts a step job given up after losing its worker (`stepGivenUp:<step>`, +1) and the workers
   * it took down (`stepDeaths:<step>`, +deaths) on the run's own hash, so the counts expire with
   * the run. The two counts after the increments.
   */
  async countStepLoss(
    runId: string,
    step: number,
    deaths: number,
  ): Promise<{ givenUp: number; deaths: number }> {
    const cp = this.keys.run(runId).cp;
    const [givenUp, died] = await Promise.all([
      this.redis.hincrby(cp, `stepGivenUp:${String(step)}`, 1),
      this.redis.hincrby(cp, `stepDeaths:${String(step)}`, deaths),
    ]);
    return { givenUp, deaths: died };
  }

  /** PTTL of the run's `cp` hash: ms left, -1 without expiry, -2 when it is gone. */
  async expiresInMs(runId: string): Promise<number> {
    return this.redis.pttl(this.keys.run(runId).cp);
  }

  /**
   * An archived run's keys (and its webhook keys whose outbox is done with them, i.e. that have a
   * TTL already) expire after `seconds`, in one MULTI.
   */
  async expireArchived(runId: string, seconds: number): Promise<void> {
    const multi = this.redis.multi();
    for (const key of runDataKeys(this.keys.run(runId))) multi.expire(key, seconds);
    const hook = this.keys.webhook(runId);
    multi.expire(hook.config, seconds, 'XX');
    multi.expire(hook.log, seconds, 'XX');
    await multi.exec();
  }

  /**
   * tenant, status, agent, threadId, createdAt, updatedAt of each run (one HMGET each, sent
   * together); a run that no longer exists has nulls.
   */
  async scheduledRunFields(runIds: readonly string[]): Promise<(string | null)[][]> {
    return Promise.all(
      runIds.map((runId) => this.redis.hmget(this.keys.run(runId).cp, ...SCHEDULED_RUN_FIELDS)),
    );
  }
}
