import { createHash, randomBytes } from 'node:crypto';
import type { JsonObject } from '@baton/protocol';
import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';

/** What a waitpoint token maps to (stored under the token's hash, never the token). */
export interface WaitpointRecord {
  readonly tenantId: string;
  readonly runId: string;
  readonly toolCallId: string;
  readonly responseSchema?: JsonObject;
  readonly expiresAt: number;
  readonly createdAt: number;
}

/** The first completion, answered to every repeat. */
export interface StoredOutcome {
  readonly decisionId: string;
  readonly completedAt: number;
}

/** 256 random bits, base64url (43 characters). */
export function newWaitpointToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashWaitpointToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A well-formed token: anything else is a wrong one (404) without a Redis read. */
export function isWaitpointTokenShape(token: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(token);
}

/** Waitpoint records: a HASH per token hash (`rec`, and `outcome` once completed). */
export class WaitpointStore {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  async create(tokenHash: string, record: WaitpointRecord): Promise<void> {
    const key = this.keys.waitpoint(tokenHash);
    await this.redis
      .multi()
      .hset(key, 'rec', JSON.stringify(record))
      .pexpireat(key, record.expiresAt)
      .exec();
  }

  /** The record and its outcome; null when unknown or expired (Redis drops it at expiresAt). */
  async get(
    tokenHash: string,
    now: number,
  ): Promise<{ record: WaitpointRecord; outcome: StoredOutcome | null } | null> {
    const [rec, outcome] = await this.redis.hmget(this.keys.waitpoint(tokenHash), 'rec', 'outcome');
    if (rec === null || rec === undefined) return null;
    const record = JSON.parse(rec) as WaitpointRecord;
    // Expiry is enforced on read: Redis' own expiry may lag its time by a little.
    if (record.expiresAt <= now) return null;
    return {
      record,
      outcome: outcome ? (JSON.parse(outcome) as StoredOutcome) : null,
    };
  }

  /** Stores the first outcome (HSETNX: a concurrent second completion keeps the first). */
  async recordOutcome(tokenHash: string, outcome: StoredOutcome): Promise<StoredOutcome> {
    const key = this.keys.waitpoint(tokenHash);
    const set = await this.redis.hsetnx(key, 'outcome', JSON.stringify(outcome));
    if (set === 1) return outcome;
    const first = await this.redis.hget(key, 'outcome');
    return first ? (JSON.parse(first) as StoredOutcome) : outcome;
  }
}
