import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { BatonError } from '@baton/core';
import { canonicalJson } from '@baton/protocol';
import type { RedisClient } from '@baton/runtime';
import { defineScript, type BatonKeys, type LuaScript } from '@baton/runtime/internal';

/** Equal bodies hash equally whatever their key order. */
export function bodyHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/** A UUID (version 8: its bits are a digest's) made of the first 128 bits of a hex digest. */
function uuidOf(hex: string): string {
  const variant = (8 | (Number.parseInt(hex.charAt(16), 16) & 3)).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * An id derived from the tenant, the Idempotency-Key and the body (`what` tells the ids of one
 * request apart), given to what a request under that key creates. An attempt after one that
 * created it and then failed (the key was released, see IdempotencyStore.run) finds it instead of
 * creating a second one; another body under the same key is another request.
 */
export function idempotentId(
  what: string,
  tenantId: string,
  idemKey: string,
  body: unknown,
): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([what, tenantId, idemKey, bodyHash(body)]))
    .digest('hex');
  return uuidOf(digest);
}

/** The ids of a run created under an Idempotency-Key, and of the thread made up for it. */
export function idempotentRunIds(
  tenantId: string,
  idemKey: string,
  body: unknown,
): { runId: string; threadId: string } {
  return {
    runId: idempotentId('run', tenantId, idemKey, body),
    threadId: idempotentId('thread', tenantId, idemKey, body),
  };
}

interface Record_<T> {
  readonly bodyHash: string;
  readonly state: 'pending' | 'done';
  readonly response?: T;
  /**
   * The attempt that holds a pending claim (absent in records of releases before it): only that
   * attempt's own release or answer replaces the claim, never another attempt's.
   */
  readonly attempt?: string;
}

export const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

/** KEYS: the record. ARGV: the claim as written, the record to put in its place ('' = delete), ttl. */
const SETTLE_CLAIM_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) end
return 1`;
type SettleClaim = LuaScript<[record: string], [claim: string, next: string, ttl: number], number>;

/** How often a claim Redis refused to settle is tried again (until its own lapse). */
const SETTLE_RETRY_MS = 200;

/** A claim whose attempt ended while Redis could not take its release or its answer. */
interface Unsettled {
  /** The record's key. */
  readonly key: string;
  readonly claim: string;
  /** '' = release the key; else the answer to record. */
  readonly next: string;
  readonly ttl: number;
  /** When the claim lapses on its own: no point trying after that. */
  readonly until: number;
}

/**
 * Idempotency-Key support, shared by every API instance through Redis: key -> {bodyHash, response}
 * with a TTL. The first request claims the key (SET NX, 'pending', with its attempt's token),
 * runs, and stores its response; a retry with the same body gets that response, a different body
 * gets 409 idempotency_conflict. A failed attempt releases the key so the client can retry; a
 * retry that waits on a claim takes the key as soon as it is released and runs the request.
 *
 * An attempt that fails because Redis is down or refusing commands (a failover, a crash) cannot
 * release its claim then: the release (or the answer of an attempt that succeeded) is kept in
 * this process and tried again every SETTLE_RETRY_MS until Redis takes it, so a retry after the
 * outage finds the key free (or answered) within a fraction of a second of Redis being back,
 * instead of hearing 409 until the claim lapses. A claim nobody settles (its API died) lapses
 * after `pendingTtlSeconds`.
 */
export class IdempotencyStore {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly ttlSeconds: number;
  private readonly pendingWaitMs: number;
  private readonly pendingTtlSeconds: number;
  private readonly settleScript: SettleClaim;
  /** Claims to settle once Redis answers, by claim (each attempt's is its own). */
  private readonly unsettled = new Map<string, Unsettled>();
  private retryTimer: NodeJS.Timeout | null = null;

  /**
   * `pendingTtlSeconds`: how long a claim whose request never finished (its API died) blocks the
   * key before a retry may run it again. Safe because what runs under a key derives its ids from
   * it (a second execution finds the first one's run or schedule and answers it), so this only
   * bounds how long a retry hears "still in progress"; it is not what makes the request happen
   * once.
   */
  constructor(
    redis: RedisClient,
    keys: BatonKeys,
    ttlSeconds: number,
    pendingWaitMs = 10_000,
    pendingTtlSeconds = 60,
  ) {
    this.redis = redis;
    this.keys = keys;
    this.ttlSeconds = ttlSeconds;
    this.pendingWaitMs = pendingWaitMs;
    this.pendingTtlSeconds = Math.min(ttlSeconds, pendingTtlSeconds);
    this.settleScript = defineScript(redis, 'batonIdempotencySettle', 1, SETTLE_CLAIM_LUA);
  }

  private key(tenantId: string, scope: string, idemKey: string): string {
    return this.keys.idempotency(tenantId, scope, idemKey);
  }

  /** Runs `execute` once per (tenant, scope, key); replays return the first response. */
  async run<T>(
    tenantId: string,
    scope: string,
    idemKey: string,
    body: unknown,
    execute: () => Promise<T>,
  ): Promise<{ response: T; replayed: boolean }> {
    if (!IDEMPOTENCY_KEY_RE.test(idemKey))
      throw new BatonError(
        'bad_request',
        'Idempotency-Key must be 1-255 printable ASCII characters without spaces',
      );
    const key = this.key(tenantId, scope, idemKey);
    const hash = bodyHash(body);
    const deadline = Date.now() + this.pendingWaitMs;
    for (;;) {
      const claim = JSON.stringify({
        bodyHash: hash,
        state: 'pending',
        attempt: randomUUID(),
      } satisfies Record_<T>);
      const claimed = await this.redis
        .set(key, claim, 'EX', this.pendingTtlSeconds, 'NX')
        .catch((error: unknown) => {
          // It may have applied with its reply lost (a command timeout, a failover): released
          // once Redis answers, like a failed attempt's (a claim that never landed is no-op).
          this.keepUnsettled(key, { claim, next: '', ttl: 0 });
          throw error;
        });
      if (claimed !== null)
        return { response: await this.attempt(key, claim, hash, execute), replayed: false };
      const existing = await this.awaitExisting<T>(key, hash, deadline);
      if (existing !== null) return { response: existing.response, replayed: true };
      // The claim was released (its attempt failed) or lapsed while this request waited: this
      // request claims the key now and runs.
    }
  }

  /** Runs the request under its claim and settles the claim with the outcome. */
  private async attempt<T>(
    key: string,
    claim: string,
    hash: string,
    execute: () => Promise<T>,
  ): Promise<T> {
    let response: T;
    try {
      response = await execute();
    } catch (error) {
      await this.settle(key, { claim, next: '', ttl: 0 });
      throw error;
    }
    const done: Record_<T> = { bodyHash: hash, state: 'done', response };
    // The request happened: its answer is the reply even when Redis cannot record it now (it is
    // recorded once Redis answers; a retry before that waits for it, or runs the request again
    // under the same derived ids, which answers the same run or schedule).
    await this.settle(key, { claim, next: JSON.stringify(done), ttl: this.ttlSeconds });
    return response;
  }

  /** Replaces this attempt's claim by `next`; kept and retried in the background if Redis refuses. */
  private async settle(
    key: string,
    outcome: { claim: string; next: string; ttl: number },
  ): Promise<void> {
    try {
      await this.settleScript([key], [outcome.claim, outcome.next, outcome.ttl]);
    } catch {
      this.keepUnsettled(key, outcome);
    }
  }

  private keepUnsettled(key: string, outcome: { claim: string; next: string; ttl: number }): void {
    this.unsettled.set(outcome.claim, {
      key,
      ...outcome,
      until: Date.now() + this.pendingTtlSeconds * 1000,
    });
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== null || this.unsettled.size === 0) return;
    this.retryTimer = setTimeout(() => {
      void this.retryUnsettled().finally(() => {
        this.retryTimer = null;
        this.scheduleRetry();
      });
    }, SETTLE_RETRY_MS);
    // Pending settlements never keep a process from exiting: their claims lapse on their own.
    this.retryTimer.unref();
  }

  private async retryUnsettled(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.unsettled.values()].map(async (u) => {
        if (now > u.until) {
          this.unsettled.delete(u.claim);
          return;
        }
        try {
          await this.settleScript([u.key], [u.claim, u.next, u.ttl]);
          this.unsettled.delete(u.claim);
        } catch {
          // Redis still refuses: tried again at the next round.
        }
      }),
    );
  }

  /**
   * The answer recorded under the key (null: the claim was released or lapsed while this waited,
   * and the key is free to claim).
   */
  private async awaitExisting<T>(
    key: string,
    hash: string,
    deadline: number,
  ): Promise<{ response: T } | null> {
    for (;;) {
      const raw = await this.redis.get(key);
      if (raw === null) return null;
      const record = JSON.parse(raw) as Record_<T>;
      if (record.bodyHash !== hash)
        throw new BatonError(
          'idempotency_conflict',
          'this Idempotency-Key was already used with a different request body; use a new key for a different request',
        );
      if (record.state === 'done' && record.response !== undefined)
        return { response: record.response };
      if (Date.now() > deadline)
        throw new BatonError(
          'conflict',
          'a request with this Idempotency-Key is still in progress; retry later',
        );
      await delay(25);
    }
  }
}
