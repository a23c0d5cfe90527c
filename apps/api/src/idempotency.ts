import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { BatonError } from '@baton/core';
import { canonicalJson } from '@baton/protocol';
import type { RedisClient } from '@baton/runtime';
import type { BatonKeys } from '@baton/runtime/internal';

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
}

export const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency-Key support, shared by every API instance through Redis: key -> {bodyHash, response}
 * with a TTL. The first request claims the key (SET NX, 'pending'), runs, and stores its response;
 * a retry with the same body gets that response, a different body gets 409 idempotency_conflict.
 * A failed first attempt releases the key so the client can retry; a claim nobody finished (its
 * API died) lapses after `pendingTtlSeconds`.
 */
export class IdempotencyStore {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly ttlSeconds: number;
  private readonly pendingWaitMs: number;

  private readonly pendingTtlSeconds: number;

  /**
   * `pendingTtlSeconds`: how long a claim whose request never finished (its API died, or both
   * the request and the release of its claim failed) blocks the key before a retry may run it
   * again. Safe because what runs under a key derives its ids from it (a second execution finds
   * the first one's run or schedule and answers it), so this only bounds how long a retry hears
   * "still in progress"; it is not what makes the request happen once.
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
    const claim: Record_<T> = { bodyHash: hash, state: 'pending' };
    const claimed = await this.redis.set(
      key,
      JSON.stringify(claim),
      'EX',
      this.pendingTtlSeconds,
      'NX',
    );
    if (claimed === null)
      return { response: await this.awaitExisting<T>(key, hash), replayed: true };
    let response: T;
    try {
      response = await execute();
    } catch (error) {
      await this.redis.del(key).catch(() => undefined);
      throw error;
    }
    const done: Record_<T> = { bodyHash: hash, state: 'done', response };
    await this.redis.set(key, JSON.stringify(done), 'EX', this.ttlSeconds);
    return { response, replayed: false };
  }

  private async awaitExisting<T>(key: string, hash: string): Promise<T> {
    const deadline = Date.now() + this.pendingWaitMs;
    for (;;) {
      const raw = await this.redis.get(key);
      if (raw === null)
        throw new BatonError(
          'conflict',
          'a request with this Idempotency-Key failed or expired while this one waited; retry it',
        );
      const record = JSON.parse(raw) as Record_<T>;
      if (record.bodyHash !== hash)
        throw new BatonError(
          'idempotency_conflict',
          'this Idempotency-Key was already used with a different request body; use a new key for a different request',
        );
      if (record.state === 'done' && record.response !== undefined) return record.response;
      if (Date.now() > deadline)
        throw new BatonError(
          'conflict',
          'a request with this Idempotency-Key is still in progress; retry later',
        );
      await delay(25);
    }
  }
}
