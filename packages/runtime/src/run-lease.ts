import { randomUUID } from 'node:crypto';
import type { BatonKeys } from './redis/keys.ts';
import { LeaseLostError } from './redis/redis-run-store.ts';
import { defineScript, type LuaScript, type RedisClient } from './redis/scripts.ts';

/**
 * Single-flight per run, with fencing. Exactly one job (step or tool drain) may advance a run at a
 * time; a job that finds the lease taken leaves a "pending" mark instead of waiting, and the holder
 * sees the mark when it releases and makes another pass. So no wake-up is ever lost and no worker
 * blocks on another. A crashed or paused holder's lease expires after its TTL.
 *
 * The token is also the fencing token: every write a worker makes for the run (commit, delta
 * append) carries it and the write script refuses it unless it is still the run's lease. A holder
 * that was paused past its TTL therefore cannot write anything when it wakes up, and learns that
 * it lost the run from the first refused write or the first refused renewal, whichever comes first.
 *
 * The holder's job is noted in the run's checkpoint hash (field `driver`, '<queue>:<jobId>'), so
 * that when the holder dies the reconciler can ask whether that job is still alive (BullMQ moves
 * a stalled job back to wait) before it schedules a pass of its own.
 *
 * KEYS: lease, pending, cp   ARGV: token, ttlMs, pendingTtlMs, driver ('' = none)
 * Reply: 1 acquired | 0 busy (mark left)
 */
const ACQUIRE_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[4] ~= '' and redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('HSET', KEYS[3], 'driver', ARGV[4])
  end
  return 1
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return 0`;

/**
 * ACQUIRE_LUA, and on success the run's checkpoint in the same round trip.
 * KEYS: lease, pending, cp, messages   ARGV: token, ttlMs, pendingTtlMs, driver
 * Reply: {1, data|false, version|false, {messageJson…}} acquired | {0} busy (mark left)
 */
const ACQUIRE_LOAD_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local state = redis.call('HMGET', KEYS[3], 'data', 'version')
  if ARGV[4] ~= '' and state[2] then
    redis.call('HSET', KEYS[3], 'driver', ARGV[4])
  end
  return {1, state[1], state[2], redis.call('LRANGE', KEYS[4], 0, -1)}
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return {0}`;

/** KEYS: lease, pending   ARGV: token   Reply: -1 not ours | 1 released, someone asked | 0 released */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
if redis.call('DEL', KEYS[2]) == 1 then return 1 end
return 0`;

/**
 * Releases only when nobody asked for the run meanwhile; otherwise clears the mark and keeps the
 * lease, so the holder makes one more pass itself instead of scheduling a job for it.
 * KEYS: lease, pending   ARGV: token, ttlMs   Reply: -1 not ours | 0 kept (look again) | 1 released
 */
const RELEASE_IF_IDLE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('DEL', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1])
return 1`;

/** KEYS: lease   ARGV: token, ttlMs   Reply: 1 renewed | 0 not ours any more */
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

export interface Lease {
  readonly runId: string;
  /** The fencing token every write for the run must carry. */
  readonly token: string;
  /** How long the lease lives without a renewal. */
  readonly ttlMs: number;
  /** Aborts when the lease is lost: in-flight model calls and tools stop at once. */
  readonly signal: AbortSignal;
  readonly lost: boolean;
  /** Records that the lease is gone (a fenced write was refused) and aborts `signal`. */
  markLost(why: string): void;
  /** Throws LeaseLostError when the lease is lost. */
  check(): void;
  /**
   * A commit released the lease (`released`) or, because someone asked for the run meanwhile,
   * cleared the mark and renewed it (false: the caller must look at the run again).
   */
  settle(released: boolean): void;
  /** Releases; true when another job asked for the run meanwhile (the caller must reschedule). */
  release(): Promise<boolean>;
  /**
   * Releases unless another job asked for the run meanwhile; then the mark is cleared, the lease
   * kept, and false returned: the caller must look at the run again. Throws LeaseLostError when
   * the lease is not ours any more.
   */
  releaseIfIdle(): Promise<boolean>;
}

type LeaseAcquire = LuaScript<
  [lease: string, pending: string, cp: string],
  [token: string, ttlMs: number, pendingTtlMs: number, driver: string],
  0 | 1
>;
type LeaseAcquireLoad = LuaScript<
  [lease: string, pending: string, cp: string, messages: string],
  [token: string, ttlMs: number, pendingTtlMs: number, driver: string],
  [1, string | null, string | null, string[]] | [0]
>;
type LeaseRelease = LuaScript<[lease: string, pending: string], [token: string], -1 | 0 | 1>;
type LeaseReleaseIfIdle = LuaScript<
  [lease: string, pending: string],
  [token: string, ttlMs: number],
  -1 | 0 | 1
>;
type LeaseRenew = LuaScript<[lease: string], [token: string, ttlMs: number], 0 | 1>;

export class RunLeases {
  private readonly acquireScript: LeaseAcquire;
  private readonly acquireLoadScript: LeaseAcquireLoad;
  private readonly releaseScript: LeaseRelease;
  private readonly releaseIfIdleScript: LeaseReleaseIfIdle;
  private readonly renewScript: LeaseRenew;
  private readonly keys: BatonKeys;
  readonly ttlMs: number;

  constructor(redis: RedisClient, keys: BatonKeys, ttlMs: number) {
    this.keys = keys;
    this.ttlMs = ttlMs;
    this.acquireScript = defineScript(redis, 'batonLeaseAcquire2', 3, ACQUIRE_LUA);
    this.acquireLoadScript = defineScript(redis, 'batonLeaseAcquireLoad2', 4, ACQUIRE_LOAD_LUA);
    this.releaseScript = defineScript(redis, 'batonLeaseRelease', 2, RELEASE_LUA);
    this.renewScript = defineScript(redis, 'batonLeaseRenew', 1, RENEW_LUA);
    this.releaseIfIdleScript = defineScript(
      redis,
      'batonLeaseReleaseIfIdle',
      2,
      RELEASE_IF_IDLE_LUA,
    );
  }

  /**
   * The lease, renewed in the background until released; null when another job holds it.
   * `driver` ('<queue>:<jobId>') names the job that will hold it.
   */
  async acquire(runId: string, driver = ''): Promise<Lease | null> {
    const token = randomUUID();
    const { lease: leaseKey, pending, cp } = this.keys.run(runId);
    const ttl = this.ttlMs;
    // The pending mark outlives the lease so a holder that crashes still leaves it for the next one.
    const got = await this.acquireScript([leaseKey, pending, cp], [token, ttl, ttl * 4, driver]);
    if (got !== 1) return null;
    return this.held(runId, token);
  }

  /**
   * acquire() and the run's stored checkpoint fields in one round trip: what every pass does
   * first. `data`/`version` are null when the run does not exist.
   */
  async acquireAndLoad(
    runId: string,
    driver = '',
  ): Promise<{
    lease: Lease;
    data: string | null;
    version: string | null;
    messages: string[];
  } | null> {
    const token = randomUUID();
    const { lease: leaseKey, pending, cp, messages } = this.keys.run(runId);
    const ttl = this.ttlMs;
    const reply = await this.acquireLoadScript(
      [leaseKey, pending, cp, messages],
      [token, ttl, ttl * 4, driver],
    );
    if (reply[0] !== 1) return null;
    return {
      lease: this.held(runId, token),
      data: reply[1] ?? null,
      version: reply[2] ?? null,
      messages: reply[3],
    };
  }

  private held(runId: string, token: string): Lease {
    const { lease: leaseKey, pending } = this.keys.run(runId);
    const ttl = this.ttlMs;
    const controller = new AbortController();
    // Until a renewal succeeds, the lease is only known to be ours for one TTL from now: a
    // renewal that cannot reach Redis before then must assume another worker took the run.
    let validUntil = Date.now() + ttl;
    let released = false;
    const markLost = (why: string): void => {
      if (controller.signal.aborted) return;
      clearInterval(timer);
      controller.abort(new LeaseLostError(runId, why));
    };
    const timer = setInterval(
      () => {
        if (Date.now() >= validUntil) {
          markLost('lease expired before it could be renewed');
          return;
        }
        const attemptAt = Date.now();
        this.renewScript([leaseKey], [token, ttl]).then(
          (ok) => {
            if (ok === 1) validUntil = attemptAt + ttl;
            else markLost('renewal refused: another worker holds the run');
          },
          () => {
            if (Date.now() >= validUntil) markLost('renewal failed until the lease expired');
          },
        );
      },
      Math.max(50, Math.floor(ttl / 3)),
    );
    timer.unref();
    const stop = (): void => {
      released = true;
      clearInterval(timer);
    };
    const lease: Lease = {
      runId,
      token,
      ttlMs: ttl,
      signal: controller.signal,
      get lost() {
        return controller.signal.aborted;
      },
      markLost,
      settle: (releasedByCommit) => {
        if (releasedByCommit) stop();
        else validUntil = Date.now() + ttl;
      },
      check: () => {
        if (controller.signal.aborted) throw new LeaseLostError(runId);
      },
      release: async () => {
        if (released) return false;
        stop();
        return (await this.releaseScript([leaseKey, pending], [token])) === 1;
      },
      releaseIfIdle: async () => {
        if (released) return true;
        const result = await this.releaseIfIdleScript([leaseKey, pending], [token, ttl]);
        if (result === -1) {
          stop();
          markLost('lease taken over before release');
          throw new LeaseLostError(runId, 'lease taken over before release');
        }
        if (result === 0) {
          validUntil = Date.now() + ttl;
          return false;
        }
        stop();
        return true;
      },
    };
    return lease;
  }
}
