import { randomToken } from './random-token.ts';
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
 * ACQUIRE_LUA, and on success the run's checkpoint and the results already recorded for its
 * running calls (the commit keeps their mailbox fields in `awaiting`, a JSON array; absent on
 * runs written before it existed), all in the same round trip. A tool job first records its own
 * result (`recordField` ≠ '': first writer wins, as in the mailbox) in the same script. With
 * `deferIfComplete` = '1' (a child job of a step job that BullMQ re-enters once its last child
 * finished) the lease is not even tried when every awaited call now has a result: the round is
 * over and that re-entry applies them all with its next round, in one commit.
 * The messages: a reader that kept the first `knownCount` messages of the list named
 * `knownName` (the run's 'mepoch', see COMMIT_LUA) gets only the ones after them, when the list
 * still has that name and at least that many; otherwise all of them (`from` says which).
 * KEYS: lease, pending, cp, messages, results
 * ARGV: token, ttlMs, pendingTtlMs, driver, recordField, recordJson, recordTtlSeconds,
 *       deferIfComplete, knownName ('' = none), knownCount
 * Reply: {1, data|false, version|false, {messageJson…}, onRecord|false, awaiting|false,
 *         {resultJson|false…}|false, name|false, from} acquired
 *       | {0, onRecord|false} busy (mark left)
 *       | {2, onRecord|false} deferred (round complete, nothing taken)
 * `onRecord`: the result that was already on record when one was to be recorded.
 */
const ACQUIRE_LOAD_LUA = `
local results = KEYS[5]
local onRecord = false
if ARGV[5] ~= '' then
  if redis.call('HSETNX', results, ARGV[5], ARGV[6]) == 1 then
    redis.call('EXPIRE', results, ARGV[7])
  else
    onRecord = redis.call('HGET', results, ARGV[5])
  end
end
if ARGV[8] == '1' then
  local awaiting = redis.call('HGET', KEYS[3], 'awaiting')
  if awaiting then
    local fields = cjson.decode(awaiting)
    if #fields > 0 then
      local complete = true
      local recorded = redis.call('HMGET', results, unpack(fields))
      for i = 1, #fields do
        if not recorded[i] then complete = false end
      end
      if complete then return {2, onRecord} end
    end
  end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local state = redis.call('HMGET', KEYS[3], 'data', 'version', 'awaiting', 'mepoch')
  if ARGV[4] ~= '' and state[2] then
    redis.call('HSET', KEYS[3], 'driver', ARGV[4])
  end
  local recorded = false
  if state[3] then
    local fields = cjson.decode(state[3])
    if #fields > 0 then recorded = redis.call('HMGET', results, unpack(fields)) else recorded = {} end
  end
  local from = 0
  if ARGV[9] ~= '' and state[4] == ARGV[9] then
    from = tonumber(ARGV[10])
    -- shorter than what the reader kept: Redis lost a suffix (a restart from an older past)
    if redis.call('LLEN', KEYS[4]) < from then from = 0 end
  end
  local list = redis.call('LRANGE', KEYS[4], from, -1)
  return {1, state[1], state[2], list, onRecord, state[3], recorded, state[4], from}
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return {0, onRecord}`;

/** KEYS: lease, pending   ARGV: token   Reply: -1 not ours | 1 released, someone asked | 0 released */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
if redis.call('DEL', KEYS[2]) == 1 then return 1 end
return 0`;

/**
 * RELEASE_LUA, and when someone asked for the run meanwhile, its stored checkpoint in the same
 * round trip: the caller must look at it to decide who carries the run on.
 * KEYS: lease, pending, cp, messages   ARGV: token
 * Reply: {-1} not ours | {0} released | {1, data|false, version|false, {messageJson…}} released, asked
 */
const RELEASE_READ_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-1} end
redis.call('DEL', KEYS[1])
if redis.call('DEL', KEYS[2]) == 0 then return {0} end
local state = redis.call('HMGET', KEYS[3], 'data', 'version')
return {1, state[1], state[2], redis.call('LRANGE', KEYS[4], 0, -1)}`;

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
   * release(), and when another job asked for the run meanwhile its stored fields, read in the
   * same round trip (null: nobody asked, or released before).
   */
  releaseAndRead(): Promise<StoredFields | null>;
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
  [lease: string, pending: string, cp: string, messages: string, results: string],
  [
    token: string,
    ttlMs: number,
    pendingTtlMs: number,
    driver: string,
    recordField: string,
    recordJson: string,
    recordTtlSeconds: number,
    deferIfComplete: '0' | '1',
    knownName: string,
    knownCount: number,
  ],
  | [
      1,
      string | null,
      string | null,
      string[],
      string | null,
      string | null,
      (string | null)[] | null,
      string | null,
      number,
    ]
  | [0 | 2, string | null]
>;

/** A result to record in the run's mailbox before the lease is tried (see acquireAndLoad). */
export interface RecordFirst {
  readonly field: string;
  readonly json: string;
  readonly ttlSeconds: number;
  /**
   * Take nothing when this result completes the round (every awaited call has one): the
   * recorder is a child job whose parent step job BullMQ re-enters next, and applies them.
   */
  readonly deferIfComplete?: boolean;
}

/** The results on record for a run's running calls, read with its checkpoint. */
export interface AwaitedResults {
  /** Mailbox fields of the running calls when the checkpoint was written, in call order. */
  readonly fields: readonly string[];
  /** The result recorded under each field (null: none yet). */
  readonly results: readonly (string | null)[];
}

/** Messages a reader kept of a run's list: its name ('mepoch') and how many. */
export interface KnownMessages {
  readonly name: string;
  readonly count: number;
}

export interface AcquiredAndLoaded {
  readonly lease: Lease;
  readonly data: string | null;
  readonly version: string | null;
  /** The stored messages from index `messagesFrom` on (0: all of them). */
  readonly messages: string[];
  readonly messagesFrom: number;
  /** The list's name ('mepoch'); null for a run written before lists were named. */
  readonly messagesName: string | null;
  /** null: the run was written before `awaiting` existed (read the mailbox instead). */
  readonly awaited: AwaitedResults | null;
}
type LeaseRelease = LuaScript<[lease: string, pending: string], [token: string], -1 | 0 | 1>;
type LeaseReleaseRead = LuaScript<
  [lease: string, pending: string, cp: string, messages: string],
  [token: string],
  [-1] | [0] | [1, string | null, string | null, string[]]
>;

/** A run's checkpoint fields as stored (decode with the run store's decodeStored). */
export interface StoredFields {
  readonly data: string | null;
  readonly version: string | null;
  readonly messages: string[];
}
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
  private readonly releaseReadScript: LeaseReleaseRead;
  private readonly releaseIfIdleScript: LeaseReleaseIfIdle;
  private readonly renewScript: LeaseRenew;
  private readonly keys: BatonKeys;
  readonly ttlMs: number;

  constructor(redis: RedisClient, keys: BatonKeys, ttlMs: number) {
    this.keys = keys;
    this.ttlMs = ttlMs;
    this.acquireScript = defineScript(redis, 'batonLeaseAcquire2', 3, ACQUIRE_LUA);
    this.acquireLoadScript = defineScript(redis, 'batonLeaseAcquireLoad5', 5, ACQUIRE_LOAD_LUA);
    this.releaseScript = defineScript(redis, 'batonLeaseRelease', 2, RELEASE_LUA);
    this.releaseReadScript = defineScript(redis, 'batonLeaseReleaseRead', 4, RELEASE_READ_LUA);
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
    const token = randomToken();
    const { lease: leaseKey, pending, cp } = this.keys.run(runId);
    const ttl = this.ttlMs;
    // The pending mark outlives the lease so a holder that crashes still leaves it for the next one.
    const got = await this.acquireScript([leaseKey, pending, cp], [token, ttl, ttl * 4, driver]);
    if (got !== 1) return null;
    return this.held(runId, token);
  }

  /**
   * acquire() and the run's stored checkpoint fields in one round trip: what every pass does
   * first. `data`/`version` are null when the run does not exist. `record`: a tool result to
   * record first (first writer wins); `onRecord` is the result that was there before, if any.
   */
  async acquireAndLoad(
    runId: string,
    driver = '',
    record?: RecordFirst,
    known?: KnownMessages,
  ): Promise<{
    acquired: AcquiredAndLoaded | null;
    onRecord: string | null;
    /** The round is complete and left to the parent step job (see RecordFirst). */
    deferred: boolean;
  }> {
    const token = randomToken();
    const { lease: leaseKey, pending, cp, messages, results } = this.keys.run(runId);
    const ttl = this.ttlMs;
    const reply = await this.acquireLoadScript(
      [leaseKey, pending, cp, messages, results],
      [
        token,
        ttl,
        ttl * 4,
        driver,
        record?.field ?? '',
        record?.json ?? '',
        record?.ttlSeconds ?? 0,
        record?.deferIfComplete === true ? '1' : '0',
        known?.name ?? '',
        known?.count ?? 0,
      ],
    );
    if (reply[0] !== 1)
      return { acquired: null, onRecord: reply[1] ?? null, deferred: reply[0] === 2 };
    const [, data, version, list, onRecord, awaiting, recorded, name, from] = reply;
    return {
      acquired: {
        lease: this.held(runId, token),
        data: data ?? null,
        version: version ?? null,
        messages: list,
        messagesFrom: Number(from),
        messagesName: name ?? null,
        awaited:
          awaiting === null || awaiting === undefined || !recorded
            ? null
            : { fields: JSON.parse(awaiting) as string[], results: recorded },
      },
      onRecord: onRecord ?? null,
      deferred: false,
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
      releaseAndRead: async () => {
        if (released) return null;
        stop();
        const { cp, messages } = this.keys.run(runId);
        const reply = await this.releaseReadScript([leaseKey, pending, cp, messages], [token]);
        if (reply[0] !== 1) return null;
        return { data: reply[1] ?? null, version: reply[2] ?? null, messages: reply[3] };
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
