import type { HolderNote } from '../internals/bullmq/job-hash.ts';
import {
  ToolExecutionResultSchema,
  type Checkpoint,
  type ToolExecutionResult,
} from '@baton/protocol';
import { mailboxField, type BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';
import type { AwaitedResults } from './checkpoint-codec.ts';
import type { RecordFirst } from './run-lease.ts';
import { RunRecordScripts } from './run-record-scripts.ts';

/**
 * Durable mailbox of tool results, keyed by call and attempt. The first result recorded for an
 * attempt wins (HSETNX), so a tool job that runs twice yields one result, and a result survives
 * the death of the job that produced it until a lease holder applies it.
 */
export class ToolResultMailbox {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  private readonly ttlSeconds: number;
  /** The mailbox's scripts (record, lookup): lua/mailbox-scripts.ts. */
  private readonly scripts: RunRecordScripts;

  /**
   * `ttlSeconds`: how long a result recorded for a finished (or missing) run is kept; a live
   * run's mailbox never expires (record_result in run-record/lua/functions.ts).
   */
  constructor(redis: RedisClient, keys: BatonKeys, ttlSeconds = 86_400) {
    this.redis = redis;
    this.keys = keys;
    this.ttlSeconds = ttlSeconds;
    this.scripts = new RunRecordScripts(redis);
  }

  /** What `record` sends to the lease acquire that records it in the same round trip. */
  recordFirst(result: ToolExecutionResult): RecordFirst {
    return {
      field: this.field(result.toolCallId, result.attempt),
      json: JSON.stringify(result),
      ttlSeconds: this.ttlSeconds,
    };
  }

  /**
   * The attempt's result when one is on record, else the run's stored checkpoint fields (null
   * when the run does not exist): one round trip. `firstStart`: the job never ran before (BullMQ
   * started it once and it never stalled), so no result of it can be on record: the checkpoint
   * fields are read alone (a plain HMGET instead of the script's two reads). `note`: the
   * attempt's holder note, written in the same round trip.
   */
  async lookup(
    runId: string,
    toolCallId: string,
    attempt: number,
    firstStart = false,
    note?: HolderNote,
  ): Promise<
    | { kind: 'recorded'; result: ToolExecutionResult }
    | { kind: 'run'; data: string | null; version: string | null }
  > {
    if (firstStart) {
      const [data, version] = note
        ? await this.scripts.readNoted(this.keys.run(runId), note)
        : await this.redis.hmget(this.keys.run(runId).cp, 'data', 'version');
      return { kind: 'run', data: data ?? null, version: version ?? null };
    }
    const reply = await this.scripts.lookupResult(
      this.keys.run(runId),
      this.field(toolCallId, attempt),
      note,
    );
    if (typeof reply[0] === 'string')
      return { kind: 'recorded', result: ToolExecutionResultSchema.parse(JSON.parse(reply[0])) };
    return { kind: 'run', data: reply[1] ?? null, version: reply[2] ?? null };
  }

  private field(toolCallId: string, attempt: number): string {
    return mailboxField(toolCallId, attempt);
  }

  /** Records the result unless one exists; returns the result that is on record. */
  async record(runId: string, result: ToolExecutionResult): Promise<ToolExecutionResult> {
    const onRecord = await this.scripts.recordResult(
      this.keys.run(runId),
      this.field(result.toolCallId, result.attempt),
      JSON.stringify(result),
      this.ttlSeconds,
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

  /**
   * Results waiting for the run's running calls, in the model's call order. `awaited`: what the
   * lease acquire read for this very checkpoint; used when it covers exactly these calls, so the
   * usual pass reads nothing here.
   */
  async pendingFor(
    cp: Checkpoint,
    awaited?: AwaitedResults | null,
  ): Promise<ToolExecutionResult[]> {
    const fields = cp.round.flatMap((id) => {
      const call = cp.calls[id];
      return call?.status === 'running' ? [this.field(call.id, call.attempt)] : [];
    });
    if (fields.length === 0) return [];
    const raw =
      awaited &&
      awaited.fields.length === fields.length &&
      awaited.fields.every((f, i) => f === fields[i])
        ? awaited.results
        : await this.redis.hmget(this.keys.run(cp.identity.runId).results, ...fields);
    return raw.flatMap((r) => (r === null ? [] : [ToolExecutionResultSchema.parse(JSON.parse(r))]));
  }

  async clear(runId: string): Promise<void> {
    await this.redis.del(this.keys.run(runId).results);
  }
}
