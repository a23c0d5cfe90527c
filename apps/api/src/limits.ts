import { randomUUID } from 'node:crypto';
import { keyPart } from '@baton/runtime/internal';
import type { RequestHandler } from 'express';
import { type RedisClient } from '@baton/runtime';
import {
  defineScript,
  redisClientNames,
  type BatonKeys,
  type LuaScript,
} from '@baton/runtime/internal';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimitedError } from './errors.ts';

/**
 * Limits shared by every API instance through Redis, so N instances still allow one limit:
 * requests per tenant per minute and failed authentications per client IP (rate-limiter-flexible,
 * fixed one-minute windows), and open SSE streams per tenant (leases, below).
 */

function isLimited(error: unknown): error is RateLimiterRes {
  return error instanceof RateLimiterRes;
}

function minuteLimiter(redis: RedisClient, keyPrefix: string, points: number): RateLimiterRedis {
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix,
    points,
    duration: 60,
    // Redis down: each instance keeps limiting on its own rather than failing every request.
    insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration: 60 }),
  });
}

/** Requests per tenant per minute across all instances (0 = unlimited). */
export function rateLimit(
  redis: RedisClient,
  keys: BatonKeys,
  limitPerMinute: number,
): RequestHandler {
  const limiter =
    limitPerMinute > 0 ? minuteLimiter(redis, keys.tenantRateLimit, limitPerMinute) : null;
  return async (req, _res, next) => {
    const tenant = req.principal?.tenantId;
    if (limiter === null || tenant === undefined) {
      next();
      return;
    }
    try {
      await limiter.consume(keyPart(tenant));
    } catch (error) {
      if (!isLimited(error)) throw error;
      throw new RateLimitedError(
        `rate limit of ${limitPerMinute} requests per minute exceeded`,
        error.msBeforeNext / 1000,
        { limitPerMinute },
      );
    }
    next();
  };
}

/**
 * Requests per client IP per minute to the waitpoint URLs (POST /w/:token), across all
 * instances (0 = unlimited): they need no API key, so the tenant limit does not apply, and a
 * token must not be guessed at any speed.
 */
export function waitpointRateLimit(
  redis: RedisClient,
  keys: BatonKeys,
  limitPerMinute: number,
): RequestHandler {
  const limiter =
    limitPerMinute > 0 ? minuteLimiter(redis, keys.waitpointRateLimit, limitPerMinute) : null;
  return async (req, _res, next) => {
    if (limiter === null) {
      next();
      return;
    }
    try {
      await limiter.consume(keyPart(req.ip ?? 'unknown'));
    } catch (error) {
      if (!isLimited(error)) throw error;
      throw new RateLimitedError(
        `waitpoint rate limit of ${limitPerMinute} requests per minute per client exceeded`,
        error.msBeforeNext / 1000,
        { limitPerMinute },
      );
    }
    next();
  };
}

/**
 * Failed authentications per client IP across all instances. An IP over the limit gets 429
 * before its key is even checked, so keys cannot be guessed at any speed.
 */
export class AuthFailureLimiter {
  private readonly redis: RedisClient;
  private readonly limiter: RateLimiterRedis;
  readonly perMinute: number;

  constructor(redis: RedisClient, keys: BatonKeys, limitPerMinute: number) {
    this.redis = redis;
    this.perMinute = limitPerMinute;
    this.limiter = minuteLimiter(redis, keys.authFailureLimit, Math.max(1, limitPerMinute));
  }

  private refusal(msBeforeNext: number): RateLimitedError {
    return new RateLimitedError(
      `too many failed authentications from this address (limit ${this.perMinute} per minute); check the API key and retry later`,
      msBeforeNext / 1000,
      { limitPerMinute: this.perMinute },
    );
  }

  /** Throws 429 when the address is already over the limit. */
  async check(ip: string): Promise<void> {
    if (this.perMinute <= 0) return;
    const key = keyPart(ip);
    // Every authenticated request passes here, and almost every address is under the limit: one
    // GET of the limiter's counter answers that, where the limiter's own read is a MULTI of GET
    // and PTTL. Only an address at the limit (for Retry-After) or a Redis that is not ready or
    // failed (for the limiter's in-memory insurance) takes the limiter's read below.
    if (this.redis.status === 'ready') {
      const consumed = await this.redis.get(this.limiter.getKey(key)).catch(() => undefined);
      if (consumed === null) return;
      if (consumed !== undefined && Number.parseInt(consumed, 10) < this.perMinute) return;
    }
    const state = await this.limiter.get(key);
    if (state !== null && state.consumedPoints >= this.perMinute)
      throw this.refusal(state.msBeforeNext);
  }

  /** Counts one failure; the failure that crosses the limit is already answered 429. */
  async failed(ip: string): Promise<RateLimitedError | null> {
    if (this.perMinute <= 0) return null;
    try {
      const state = await this.limiter.penalty(keyPart(ip), 1);
      return state.consumedPoints > this.perMinute ? this.refusal(state.msBeforeNext) : null;
    } catch (error) {
      if (isLimited(error)) return this.refusal(error.msBeforeNext);
      throw error;
    }
  }
}

// Leases live in a ZSET per tenant: member = '<instance>/<stream id>', score = expiry (Redis
// server time, ms). Acquire drops expired leases first, so the streams of a crashed instance stop
// counting once their lease runs out; live instances refresh theirs on every heartbeat. A refused
// acquire also frees the leases of instances known to be dead (see SseConnectionLimiter), so a
// restarted API's reconnecting followers do not wait SSE_LEASE_MS. Members of releases before
// that are plain stream ids: counted, refreshed by their instance, and left to expire.

/** KEYS: leases   ARGV: leaseMs, streamId, max   Reply: -1 acquired | n open streams (refused) */
type SseAcquire = LuaScript<
  [leases: string],
  [leaseMs: number, streamId: string, max: number],
  number
>;
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then return n end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return -1
`;
/** KEYS: leases   ARGV: leaseMs, streamId…   Reply: 1 */
type SseRefresh = LuaScript<[leases: string], [leaseMs: number, ...streamIds: string[]], 1>;
const REFRESH = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- one ZADD for all the streams (score, member pairs), 1,000 pairs at a time (unpack's stack limit)
local until_ = now + tonumber(ARGV[1])
local i = 2
while i <= #ARGV do
  local pairs_ = {}
  for j = i, math.min(i + 999, #ARGV) do
    pairs_[#pairs_ + 1] = until_
    pairs_[#pairs_ + 1] = ARGV[j]
  end
  redis.call('ZADD', KEYS[1], 'XX', unpack(pairs_))
  i = i + 1000
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`;
/** KEYS: leases   ARGV: none   Reply: live leases after dropping expired ones */
type SseCount = LuaScript<[leases: string], [], number>;
const COUNT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
`;

/** How long an instance's heartbeat in the instances ZSET lasts (it beats every third of it). */
const INSTANCE_TTL_MS = 9_000;
/** How long one CLIENT LIST answer is reused by the sweeps of refused acquires. */
const CLIENTS_REUSE_MS = 1_000;

/** The Redis client name of an API instance's liveness connection. */
function livenessConnectionName(instance: string): string {
  return `baton-sse:${instance}`;
}

/**
 * Concurrent SSE streams per tenant across all API instances; over the limit is a 429.
 *
 * A crashed instance's leases would count until SSE_LEASE_MS ran out (30 s): the followers
 * reconnecting to the restarted API got 429 meanwhile (issue 32). So each instance has an id,
 * its leases carry it, and it is seen alive two ways, as workers are (StallAccounting): a
 * heartbeat in `<prefix>:sse:instances` every 3 s, and a connection to Redis named after it (the
 * kernel closes a dead process's sockets at once, and Redis forgets the connection). A refused
 * acquire looks at the instances holding the tenant's leases and removes the leases of those
 * that are dead (no heartbeat, or no connection), then tries again. Where CLIENT LIST is refused
 * (ACL, a managed Redis) the heartbeat alone decides, within INSTANCE_TTL_MS. Not atomic across
 * the two keys: an instance wrongly taken for dead (its heartbeat late by 9 s) loses only the
 * count of its open streams, which go on.
 */
export class SseConnectionLimiter {
  /** This API instance (process): the first part of its leases' members. */
  readonly instance = randomUUID();
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly max: number;
  private readonly leaseMs: number;
  /** This instance's open leases: tenant -> lease members. */
  private readonly open = new Map<string, Set<string>>();
  private readonly timer: NodeJS.Timeout;
  private readonly beat: NodeJS.Timeout;
  private readonly acquireScript: SseAcquire;
  private readonly refreshScript: SseRefresh;
  private readonly countScript: SseCount;
  /** Seen by other instances while it is connected; none when the caller brings no factory. */
  private readonly liveness: RedisClient | undefined;
  private clients: { at: number; names: Promise<Set<string> | null> } | undefined;
  private readonly sweeps = new Map<string, Promise<number>>();
  /** A heartbeat landed: until then this instance's leases would look like a dead one's. */
  private beating = false;

  constructor(
    redis: RedisClient,
    keys: BatonKeys,
    max: number,
    leaseMs = 30_000,
    livenessConnection?: (name: string) => RedisClient,
  ) {
    this.redis = redis;
    this.keys = keys;
    this.max = max;
    this.leaseMs = leaseMs;
    this.acquireScript = defineScript(redis, 'batonSseAcquire', 1, ACQUIRE);
    this.refreshScript = defineScript(redis, 'batonSseRefresh', 1, REFRESH);
    this.countScript = defineScript(redis, 'batonSseCount', 1, COUNT);
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), leaseMs / 3);
    this.timer.unref();
    this.liveness = livenessConnection?.(livenessConnectionName(this.instance));
    this.liveness?.on('error', () => undefined);
    this.liveness?.on('ready', () => void this.liveness?.ping().catch(() => undefined));
    const heartbeat = (): void => void this.heartbeat().catch(() => undefined);
    heartbeat();
    this.beat = setInterval(heartbeat, INSTANCE_TTL_MS / 3);
    this.beat.unref();
  }

  private async heartbeat(): Promise<void> {
    // A Cluster client opens a node's connection only to send a command there: the liveness
    // connection pings so that Redis sees it.
    void this.liveness?.ping().catch(() => undefined);
    const redis = this.redis;
    const [seconds, micros] = await redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const key = this.keys.sseInstances;
    await redis.zadd(key, now + INSTANCE_TTL_MS, this.instance);
    await redis.zremrangebyscore(key, '-inf', now - INSTANCE_TTL_MS);
    await redis.pexpire(key, INSTANCE_TTL_MS * 10);
    this.beating = true;
  }

  private key(tenantId: string): string {
    return this.keys.sseLeases(tenantId);
  }

  /** Open streams of the tenant on all instances (live leases). */
  async count(tenantId: string): Promise<number> {
    return this.countScript([this.key(tenantId)], []);
  }

  /** Takes a lease or throws 429; the returned function gives it back (idempotent). */
  async acquire(tenantId: string): Promise<() => void> {
    if (!this.beating) await this.heartbeat();
    const id = `${this.instance}/${randomUUID()}`;
    const take = (): Promise<number> =>
      this.acquireScript([this.key(tenantId)], [this.leaseMs, id, this.max]);
    let result = await take();
    if (result >= 0 && (await this.sweep(tenantId)) > 0) result = await take();
    if (result >= 0)
      throw new RateLimitedError(
        `tenant ${tenantId} already has ${result} open event streams (limit ${this.max}); close one or retry later`,
        5,
        { limit: this.max },
      );
    let ids = this.open.get(tenantId);
    if (!ids) this.open.set(tenantId, (ids = new Set()));
    ids.add(id);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      ids.delete(id);
      if (ids.size === 0 && this.open.get(tenantId) === ids) this.open.delete(tenantId);
      void this.redis.zrem(this.key(tenantId), id).catch(() => undefined);
    };
  }

  /** Extends every lease this instance holds (the heartbeat; public for tests). */
  async refresh(): Promise<void> {
    await Promise.all(
      [...this.open].map(([tenantId, ids]) =>
        this.refreshScript([this.key(tenantId)], [this.leaseMs, ...ids]),
      ),
    );
  }

  /**
   * Removes the tenant's leases of dead instances; how many. One sweep per tenant at a time:
   * a hundred followers refused at once share it.
   */
  private sweep(tenantId: string): Promise<number> {
    let pending = this.sweeps.get(tenantId);
    if (!pending) {
      pending = this.sweepNow(tenantId)
        .catch(() => 0)
        .finally(() => this.sweeps.delete(tenantId));
      this.sweeps.set(tenantId, pending);
    }
    return pending;
  }

  private async sweepNow(tenantId: string): Promise<number> {
    const key = this.key(tenantId);
    const byInstance = new Map<string, string[]>();
    for (const member of await this.redis.zrange(key, '0', '-1')) {
      const at = member.indexOf('/');
      if (at <= 0) continue;
      const instance = member.slice(0, at);
      if (instance === this.instance) continue;
      byInstance.set(instance, [...(byInstance.get(instance) ?? []), member]);
    }
    if (byInstance.size === 0) return 0;
    const instances = [...byInstance.keys()];
    const [[seconds, micros], scores, names] = await Promise.all([
      this.redis.time(),
      this.redis.zmscore(this.keys.sseInstances, ...instances),
      this.clientNames(),
    ]);
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const dead = instances.filter(
      (instance, i) =>
        Number(scores[i] ?? 0) <= now ||
        (names !== null && !names.has(livenessConnectionName(instance))),
    );
    const members = dead.flatMap((instance) => byInstance.get(instance) ?? []);
    return members.length === 0 ? 0 : this.redis.zrem(key, ...members);
  }

  /**
   * The client names Redis knows of (every node of a Cluster), reused for a second; null when
   * CLIENT LIST is refused or this instance has no liveness connection (the heartbeat decides).
   */
  private clientNames(): Promise<Set<string> | null> {
    if (this.clients && Date.now() - this.clients.at < CLIENTS_REUSE_MS) return this.clients.names;
    const names = this.liveness
      ? redisClientNames(this.redis).catch(() => null)
      : Promise.resolve(null);
    this.clients = { at: Date.now(), names };
    return names;
  }

  /** Stops refreshing (the instance's leases expire unless released) and leaves. */
  close(): void {
    clearInterval(this.timer);
    clearInterval(this.beat);
    this.liveness?.disconnect();
  }
}
