import type {
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpointName,
  WebhookEventType,
} from '@baton/protocol';
import type { BatonKeys } from '../redis/keys.ts';
import { defineScript, type LuaScript, type RedisClient } from '../redis/scripts.ts';

/** One subscriber of a run's webhooks, as stored with the run (the secret never leaves Redis). */
export interface WebhookEndpoint {
  readonly name: WebhookEndpointName;
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  readonly secret: string;
}

export interface RunWebhookConfig {
  readonly tenantId: string;
  readonly endpoints: readonly WebhookEndpoint[];
  readonly metadata: Readonly<Record<string, string>>;
  readonly createdAt: number;
  /** Seq of the last run event the outbox examined. */
  readonly cursor: number;
}

export type AttemptOutcome = 'delivered' | 'retry' | 'failed' | 'stopped' | 'refused';

interface RecordBase {
  readonly webhookId: string;
  readonly endpoint: WebhookEndpointName;
  readonly type: WebhookEventType;
  readonly seq: number;
  readonly at: number;
}

/** One line of a run's delivery log. */
export type WebhookLogRecord =
  | (RecordBase & { readonly k: 'enqueued' })
  | (RecordBase & {
      readonly k: 'attempt';
      readonly attempt: number;
      readonly durationMs: number;
      readonly statusCode?: number;
      readonly error?: string;
      readonly outcome: AttemptOutcome;
      readonly nextRetryAt?: number;
    });

/** Records kept per run: enough for 12 attempts of 80 messages, bounded whatever happens. */
const WEBHOOK_LOG_LIMIT = 1000;

// KEYS: config. ARGV: seq. Moves the cursor forward only (two pumps may race); -1 = no config.
const CURSOR_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local cur = tonumber(redis.call('HGET', KEYS[1], 'cursor') or '0')
local want = tonumber(ARGV[1])
if want > cur then redis.call('HSET', KEYS[1], 'cursor', ARGV[1]) return want end
return cur`;

// KEYS: config, log. ARGV: record, limit. The log lives exactly as long as the configuration
// (so a record appended after the run finished cannot outlive it); 0 = no configuration.
// A record already among the last ones is this one sent again (ioredis re-sends a command whose
// reply a dropped connection lost, though Redis ran it): records carry their time and attempt,
// so two distinct ones are never equal.
const APPEND_LUA = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if redis.call('LPOS', KEYS[2], ARGV[1], 'RANK', -1, 'MAXLEN', 64) then return 1 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1`;

// KEYS: run checkpoint, config, log. ARGV: fallback ms. Gives the webhook keys the run's own
// remaining lifetime; a run already gone takes them along at once.
const EXPIRE_LUA = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then redis.call('DEL', KEYS[2], KEYS[3]) return 0 end
if ttl == -1 then ttl = tonumber(ARGV[1]) end
redis.call('PEXPIRE', KEYS[2], ttl)
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ttl) end
return ttl`;

/** A run's webhook configuration, delivery log, and the sweeper's index, in Redis. */
export class WebhookStore {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly cursorScript: LuaScript<[config: string], [seq: number], number>;
  private readonly appendScript: LuaScript<
    [config: string, log: string],
    [record: string, limit: number],
    0 | 1
  >;
  private readonly expireScript: LuaScript<
    [cp: string, config: string, log: string],
    [fallbackMs: number],
    number
  >;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
    this.cursorScript = defineScript(redis, 'batonWebhookCursor', 1, CURSOR_LUA);
    this.appendScript = defineScript(redis, 'batonWebhookAppend', 2, APPEND_LUA);
    this.expireScript = defineScript(redis, 'batonWebhookExpire', 3, EXPIRE_LUA);
  }

  /**
   * Indexes the run for the sweeper, then stores the configuration (both before the run exists):
   * a crash in between leaves an index entry without configuration, which the sweeper drops,
   * never a configuration nobody would ever look at.
   */
  async register(
    runId: string,
    config: Omit<RunWebhookConfig, 'cursor'>,
    firstSweepAt: number,
  ): Promise<void> {
    await this.redis.zadd(this.keys.webhookRuns, firstSweepAt, runId);
    await this.redis.hset(this.keys.webhook(runId).config, {
      tenant: config.tenantId,
      endpoints: JSON.stringify(config.endpoints),
      metadata: JSON.stringify(config.metadata),
      createdAt: String(config.createdAt),
      cursor: '0',
    });
  }

  /** Drops an index entry (its configuration is gone). */
  async unindex(runId: string): Promise<void> {
    await this.redis.zrem(this.keys.webhookRuns, runId);
  }

  async load(runId: string): Promise<RunWebhookConfig | null> {
    const h = await this.redis.hgetall(this.keys.webhook(runId).config);
    if (!h['endpoints'] || !h['tenant']) return null;
    return {
      tenantId: h['tenant'],
      endpoints: JSON.parse(h['endpoints']) as WebhookEndpoint[],
      metadata: JSON.parse(h['metadata'] ?? '{}') as Record<string, string>,
      createdAt: Number(h['createdAt'] ?? 0),
      cursor: Number(h['cursor'] ?? 0),
    };
  }

  async advanceCursor(runId: string, seq: number): Promise<void> {
    await this.cursorScript([this.keys.webhook(runId).config], [seq]);
  }

  /** Appends to the delivery log; false when the configuration is gone (the run expired). */
  async append(runId: string, record: WebhookLogRecord): Promise<boolean> {
    const k = this.keys.webhook(runId);
    return (
      (await this.appendScript([k.config, k.log], [JSON.stringify(record), WEBHOOK_LOG_LIMIT])) ===
      1
    );
  }

  async readLog(runId: string): Promise<WebhookLogRecord[]> {
    const lines = await this.redis.lrange(this.keys.webhook(runId).log, 0, -1);
    return lines.map((l) => JSON.parse(l) as WebhookLogRecord);
  }

  /** The webhook keys expire with the finished run; the run leaves the sweeper's index. */
  async expireWithRun(runId: string, fallbackMs: number): Promise<void> {
    const k = this.keys.webhook(runId);
    await this.expireScript([this.keys.run(runId).cp, k.config, k.log], [fallbackMs]);
    await this.redis.zrem(this.keys.webhookRuns, runId);
  }

  /** Removes everything (the run was deleted, or never came to be). */
  async forget(runId: string): Promise<void> {
    const k = this.keys.webhook(runId);
    await this.redis.del(k.config, k.log);
    await this.redis.zrem(this.keys.webhookRuns, runId);
  }

  /** Up to `limit` runs due for a sweep at `now`. */
  async due(now: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.webhookRuns, '-inf', now, 'LIMIT', 0, limit);
  }

  /** When the sweeper should look at the run next (only if it is still indexed). */
  async schedule(runId: string, at: number): Promise<void> {
    await this.redis.zadd(this.keys.webhookRuns, 'XX', at, runId);
  }
}

const STATUS_BY_OUTCOME: Record<AttemptOutcome, WebhookDeliveryStatus> = {
  delivered: 'delivered',
  retry: 'retrying',
  failed: 'failed',
  stopped: 'stopped',
  refused: 'refused',
};

/**
 * The delivery log as deliveries: one per message and endpoint, in the order first seen, with
 * its attempts. Idempotent over repeated records (two pumps may both log an enqueue; a
 * redelivered job may log an attempt number twice, and both are shown).
 */
export function foldDeliveries(records: readonly WebhookLogRecord[]): WebhookDelivery[] {
  const byKey = new Map<string, WebhookDelivery & { attempts: WebhookDelivery['attempts'] }>();
  for (const r of records) {
    const key = `${r.webhookId}\n${r.endpoint}`;
    let d = byKey.get(key);
    if (!d) {
      d = {
        webhookId: r.webhookId,
        endpoint: r.endpoint,
        type: r.type,
        seq: r.seq,
        status: 'pending',
        attempts: [],
      };
      byKey.set(key, d);
    }
    if (r.k !== 'attempt') continue;
    d.attempts.push({
      attempt: r.attempt,
      at: r.at,
      durationMs: r.durationMs,
      ...(r.statusCode === undefined ? {} : { statusCode: r.statusCode }),
      ...(r.error === undefined ? {} : { error: r.error }),
      ...(r.nextRetryAt === undefined ? {} : { nextRetryAt: r.nextRetryAt }),
    });
    // A delivered message stays delivered even if a duplicate attempt logs later.
    if (d.status !== 'delivered') d.status = STATUS_BY_OUTCOME[r.outcome];
  }
  return [...byKey.values()];
}
