import {
  ToolExecutionResultSchema,
  type Checkpoint,
  type ToolExecutionResult,
} from '@baton/protocol';
import {
  defineScript,
  mailboxField,
  type BatonKeys,
  type LuaScript,
  type RedisClient,
} from '@baton/runtime';

/**
 * First writer wins, in one round trip.
 * KEYS: results   ARGV: field, resultJson, ttlSeconds   Reply: null recorded | the result on record
 */
const RECORD_LUA = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  return false
end
return redis.call('HGET', KEYS[1], ARGV[1])`;

type RecordResult = LuaScript<
  [results: string],
  [field: string, result: string, ttl: number],
  string | null
>;

/**
 * Durable mailbox of tool results, keyed by call and attempt. The first result recorded for an
 * attempt wins (HSETNX), so a tool job that runs twice yields one result, and a result survives
 * the death of the job that produced it until a lease holder applies it.
 */
export class ToolResultMailbox {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  private readonly ttlSeconds: number;
  private readonly recordScript: RecordResult;

  /** `ttlSeconds`: how long an unapplied result is kept (results are applied within moments). */
  constructor(redis: RedisClient, keys: BatonKeys, ttlSeconds = 86_400) {
    this.redis = redis;
    this.keys = keys;
    this.ttlSeconds = ttlSeconds;
    this.recordScript = defineScript(redis, 'batonRecordToolResult', 1, RECORD_LUA);
  }

  private field(toolCallId: string, attempt: number): string {
    return mailboxField(toolCallId, attempt);
  }

  /** Records the result unless one exists; returns the result that is on record. */
  async record(runId: string, result: ToolExecutionResult): Promise<ToolExecutionResult> {
    const onRecord = await this.recordScript(
      [this.keys.run(runId).results],
      [this.field(result.toolCallId, result.attempt), JSON.stringify(result), this.ttlSeconds],
    );
    return onRecord === null ? result : ToolExecutionResultSchema.parse(JSON.parse(onRecord));
  }

  async get(
    runId: string,
    toolCallId: string,
    attempt: number,
  ): Promise<ToolExecutionResult | null> {
    const raw = await this.redis.hget(
      this.keys.run(runId).results,
      this.field(toolCallId, attempt),
    );
    return raw === null ? null : ToolExecutionResultSchema.parse(JSON.parse(raw));
  }

  /** Results waiting for the run's running calls, in the model's call order. */
  async pendingFor(cp: Checkpoint): Promise<ToolExecutionResult[]> {
    const running = cp.round.flatMap((id) => {
      const call = cp.calls[id];
      return call?.status === 'running' ? [call] : [];
    });
    if (running.length === 0) return [];
    const raw = await this.redis.hmget(
      this.keys.run(cp.identity.runId).results,
      ...running.map((c) => this.field(c.id, c.attempt)),
    );
    return raw.flatMap((r) => (r === null ? [] : [ToolExecutionResultSchema.parse(JSON.parse(r))]));
  }

  async clear(runId: string): Promise<void> {
    await this.redis.del(this.keys.run(runId).results);
  }
}
