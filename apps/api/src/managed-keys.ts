import { randomBytes } from 'node:crypto';
import { BatonError } from '@baton/core';
import type { ApiKeyView, CreatedApiKey } from '@baton/protocol';
import type { RedisClient } from '@baton/runtime';
import { type BatonKeys, defineScript, type LuaScript } from '@baton/runtime/internal';
import { hashKey, type Principal } from './auth.ts';

/**
 * Tenant API keys created, rotated and revoked at run time (issue 35), next to the keys from the
 * environment or a file (KeyStore), which keep working. Stored in Redis by the SHA-256 of the key,
 * so a request costs one HGET (and none while the answer is cached); every API hears each change
 * on a channel and drops its cached answer, so a created or revoked key takes effect everywhere
 * within the time a PUBLISH takes. While the subscription is down (a Redis failover) cached
 * answers live only CACHE_TTL_UNSUBSCRIBED_MS.
 */

/** Managed keys start with this, so only they cost a Redis lookup (and logs can spot them). */
export const MANAGED_KEY_PREFIX = 'bk_';
const CACHE_TTL_MS = 30_000;
const CACHE_TTL_UNSUBSCRIBED_MS = 500;
/** Cached answers at most (a flood of wrong keys empties it rather than growing it). */
const CACHE_MAX = 10_000;
/** lastUsedAt is written at most this often per key and API instance. */
const LAST_USED_EVERY_MS = 60_000;
export const DEFAULT_GRACE_SECONDS = 3_600;

/** What Redis holds per key (by its hash); never the secret. */
interface KeyRecord {
  readonly id: string;
  readonly tenant: string;
  readonly name?: string;
  readonly createdAt: number;
  readonly expiresAt?: number;
  readonly rotatedTo?: string;
}

interface Cached {
  readonly record: KeyRecord | null;
  readonly at: number;
}

// KEYS: byHash, byId. ARGV: old id, new hash, new record JSON, new id, grace end (ms), now (ms).
// Reply: the old record JSON after the rotation, or an error code.
const ROTATE_LUA = `
local oldHash = redis.call('HGET', KEYS[2], ARGV[1])
if not oldHash then return {err = 'not_found'} end
local raw = redis.call('HGET', KEYS[1], oldHash)
if not raw then return {err = 'not_found'} end
local rec = cjson.decode(raw)
if rec.rotatedTo then return {err = 'rotated'} end
local graceEnd = tonumber(ARGV[5])
if rec.expiresAt and tonumber(rec.expiresAt) <= tonumber(ARGV[6]) then return {err = 'expired'} end
if (not rec.expiresAt) or tonumber(rec.expiresAt) > graceEnd then rec.expiresAt = graceEnd end
rec.rotatedTo = ARGV[4]
local updated = cjson.encode(rec)
redis.call('HSET', KEYS[1], oldHash, updated, ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[4], ARGV[2])
return updated
`;

// KEYS: byHash, byId, lastUsed. ARGV: id. Reply: the revoked key's hash, or false.
const REVOKE_LUA = `
local hash = redis.call('HGET', KEYS[2], ARGV[1])
if not hash then return false end
redis.call('HDEL', KEYS[1], hash)
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return hash
`;

function newKeyId(): string {
  return `key_${randomBytes(9).toString('base64url')}`;
}

function newSecret(): string {
  return `${MANAGED_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

function keyNotFound(id: string): BatonError {
  return new BatonError('not_found', `no managed API key "${id}" (it may have been revoked)`);
}

function statusOf(record: KeyRecord, now: number): ApiKeyView['status'] {
  if (record.expiresAt !== undefined && record.expiresAt <= now) return 'expired';
  return record.rotatedTo !== undefined ? 'grace' : 'active';
}

function viewOf(record: KeyRecord, now: number, lastUsedAt?: number): ApiKeyView {
  return {
    ...record,
    ...(lastUsedAt !== undefined ? { lastUsedAt } : {}),
    status: statusOf(record, now),
  };
}

export class ManagedKeyStore {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys['apiKeys'];
  private readonly now: () => number;
  private readonly cache = new Map<string, Cached>();
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly rotate_: LuaScript<
    [string, string],
    [string, string, string, string, number, number],
    string
  >;
  private readonly revoke_: LuaScript<[string, string, string], [string], string | null>;
  private subscriber: RedisClient | null = null;
  private subscribed = false;

  constructor(redis: RedisClient, keys: BatonKeys, now: () => number = Date.now) {
    this.redis = redis;
    this.keys = keys.apiKeys;
    this.now = now;
    this.rotate_ = defineScript(redis, 'apiKeyRotate', 2, ROTATE_LUA);
    this.revoke_ = defineScript(redis, 'apiKeyRevoke', 3, REVOKE_LUA);
  }

  /**
   * Listens for changes made by any API (a dedicated connection from `connect`). Until the
   * subscription is confirmed, and after it drops, cached answers are trusted only briefly; every
   * (re)subscription forgets them, since changes may have been missed meanwhile.
   */
  listen(connect: () => RedisClient): void {
    const sub = connect();
    this.subscriber = sub;
    const forget = (): void => {
      this.subscribed = false;
      this.cache.clear();
    };
    sub.on('close', forget);
    sub.on('end', forget);
    sub.on('ready', () => {
      sub.subscribe(this.keys.channel).then(
        () => {
          this.cache.clear();
          this.subscribed = true;
        },
        () => forget(),
      );
    });
    sub.on('message', (channel: string, hash: string) => {
      if (channel === this.keys.channel) this.cache.delete(hash);
    });
    sub.on('error', () => undefined);
  }

  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = null;
    this.subscribed = false;
  }

  /** The principal of a managed key, or null (not one, revoked, expired). One HGET when not cached. */
  async verify(presented: string): Promise<Principal | null> {
    if (!presented.startsWith(MANAGED_KEY_PREFIX)) return null;
    const hash = hashKey(presented);
    const now = this.now();
    let entry = this.cache.get(hash);
    const ttl = this.subscribed ? CACHE_TTL_MS : CACHE_TTL_UNSUBSCRIBED_MS;
    if (entry === undefined || now - entry.at > ttl) {
      const raw = await this.redis.hget(this.keys.byHash, hash);
      entry = { record: raw === null ? null : (JSON.parse(raw) as KeyRecord), at: now };
      if (this.cache.size >= CACHE_MAX) this.cache.clear();
      this.cache.set(hash, entry);
    }
    const { record } = entry;
    if (record === null) return null;
    if (record.expiresAt !== undefined && record.expiresAt <= now) return null;
    this.touch(record.id, now);
    return {
      tenantId: record.tenant,
      admin: false,
      scopes: null,
      credential: {
        kind: 'api-key',
        id: record.id,
        ...(record.expiresAt !== undefined ? { expiresAt: record.expiresAt } : {}),
      },
    };
  }

  /** Records use to the minute; best effort (a failed write only leaves lastUsedAt older). */
  private touch(id: string, now: number): void {
    const last = this.lastUsedWritten.get(id);
    if (last !== undefined && now - last < LAST_USED_EVERY_MS) return;
    if (this.lastUsedWritten.size >= CACHE_MAX) this.lastUsedWritten.clear();
    this.lastUsedWritten.set(id, now);
    this.redis.hset(this.keys.lastUsed, id, String(now)).catch(() => undefined);
  }

  private async changed(hash: string): Promise<void> {
    this.cache.delete(hash);
    await this.redis.publish(this.keys.channel, hash);
  }

  async create(
    tenant: string,
    opts: { name?: string; expiresInSeconds?: number } = {},
  ): Promise<CreatedApiKey> {
    const now = this.now();
    const key = newSecret();
    const hash = hashKey(key);
    const record: KeyRecord = {
      id: newKeyId(),
      tenant,
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      createdAt: now,
      ...(opts.expiresInSeconds !== undefined
        ? { expiresAt: now + opts.expiresInSeconds * 1000 }
        : {}),
    };
    await this.redis
      .multi()
      .hset(this.keys.byHash, hash, JSON.stringify(record))
      .hset(this.keys.byId, record.id, hash)
      .exec();
    await this.changed(hash);
    return { ...viewOf(record, now), key };
  }

  /** Every managed key (of one tenant), newest first; never a secret nor a hash. */
  async list(tenant?: string): Promise<ApiKeyView[]> {
    const [all, used] = await Promise.all([
      this.redis.hgetall(this.keys.byHash),
      this.redis.hgetall(this.keys.lastUsed),
    ]);
    const now = this.now();
    return Object.values(all)
      .map((raw) => JSON.parse(raw) as KeyRecord)
      .filter((r) => tenant === undefined || r.tenant === tenant)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => viewOf(r, now, used[r.id] === undefined ? undefined : Number(used[r.id])));
  }

  /**
   * A new key for the same tenant; the old one keeps working for `graceSeconds` (or until its
   * own expiry, if sooner). One script: two rotations of one key cannot both succeed.
   */
  async rotate(id: string, graceSeconds = DEFAULT_GRACE_SECONDS): Promise<CreatedApiKey> {
    const now = this.now();
    const hashRaw = await this.redis.hget(this.keys.byId, id);
    const oldRaw = hashRaw === null ? null : await this.redis.hget(this.keys.byHash, hashRaw);
    if (hashRaw === null || oldRaw === null) throw keyNotFound(id);
    const old = JSON.parse(oldRaw) as KeyRecord;
    const key = newSecret();
    const hash = hashKey(key);
    const record: KeyRecord = {
      id: newKeyId(),
      tenant: old.tenant,
      ...(old.name !== undefined ? { name: old.name } : {}),
      createdAt: now,
    };
    try {
      await this.rotate_(
        [this.keys.byHash, this.keys.byId],
        [id, hash, JSON.stringify(record), record.id, now + graceSeconds * 1000, now],
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : '';
      if (message.includes('not_found')) throw keyNotFound(id);
      if (message.includes('rotated'))
        throw new BatonError(
          'conflict',
          `key "${id}" was already rotated (to ${old.rotatedTo ?? 'another key'}); rotate the new key`,
        );
      if (message.includes('expired'))
        throw new BatonError('conflict', `key "${id}" has expired; create a new key instead`);
      throw error;
    }
    await Promise.all([this.changed(hashRaw), this.changed(hash)]);
    return { ...viewOf(record, now), key };
  }

  /** Stops the key on every API (within the PUBLISH); 404 when there is no such key. */
  async revoke(id: string): Promise<void> {
    const hash = await this.revoke_([this.keys.byHash, this.keys.byId, this.keys.lastUsed], [id]);
    if (hash === null) throw keyNotFound(id);
    await this.changed(hash);
  }
}
