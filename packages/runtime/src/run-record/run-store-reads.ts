import type { CheckpointTrigger, Message, RunEvent, RunStatus } from '@baton/protocol';
import type { StoredCheckpoint } from '@baton/core';
import type { BatonKeys, RunKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';
import { decodeEventPayload } from '../redis/event-payload.ts';
import { CorruptCheckpointError } from '../errors/corrupt-checkpoint-error.ts';
import { NewerFormatError } from '../errors/newer-format-error.ts';
import type { RunIndex } from './run-index.ts';
import {
  META_FIELDS,
  decodeCheckpoint,
  decodeMeta,
  type HistoryFields,
  type RunMeta,
  type RunProgress,
  type StoredHead,
} from './checkpoint-codec.ts';
import { decodeReference, readReferencedHistory } from './history-reference.ts';
import {
  decodeCursor,
  encodeCursor,
  type ListRunsQuery,
  type RunPage,
  type RunSummary,
} from './run-list-cursor.ts';

const MAX_LIMIT = 1000;

/**
 * The reads of a run's record: its checkpoint (with the thread history it references), its
 * summary fields, its events and the lists of a tenant's or a thread's runs. RedisRunStore adds
 * the writes; the two share a client, the key layout and the index.
 */
export class RunStoreReads {
  readonly keys: BatonKeys;
  /** Every write to the indexes that list runs (run-index.ts). */
  readonly index: RunIndex;
  protected readonly redis: RedisClient;
  private readonly validateOnLoad: boolean;

  constructor(redis: RedisClient, keys: BatonKeys, index: RunIndex, validateOnLoad: boolean) {
    this.redis = redis;
    this.keys = keys;
    this.index = index;
    this.validateOnLoad = validateOnLoad;
  }

  /** Pub/sub channel of a run (RunEventSource, used by RunEventSubscriber). */
  channelOf(runId: string): string {
    return this.keys.channel(runId);
  }

  async load(runId: string): Promise<StoredCheckpoint | null> {
    const { data, version, messages, history } = await this.readStored(runId);
    return this.decodeStored(runId, data, version, await this.withHistory(history, messages));
  }

  /** load() with a full CheckpointSchema parse (debug / admin paths). */
  async loadValidated(runId: string): Promise<StoredCheckpoint | null> {
    const { data, version, messages, history } = await this.readStored(runId);
    return this.decodeStored(runId, data, version, await this.withHistory(history, messages), true);
  }

  /**
   * The checkpoint's fields, its own messages list, the list's name ('mepoch') and where its
   * referenced thread history is, in one round trip (one hash slot): decode with decodeStored,
   * after withHistory.
   */
  async readStored(runId: string): Promise<{
    data: string | null;
    version: string | null;
    messages: string[];
    messagesName: string | null;
    history: HistoryFields;
  }> {
    const k = this.keys.run(runId);
    const replies = await this.redis
      .pipeline()
      .hmget(k.cp, 'data', 'version', 'mepoch', 'hist', 'tenant', 'threadId')
      .lrange(k.messages, 0, -1)
      .exec();
    if (!replies) throw new Error(`run ${runId}: load was not executed`);
    for (const [error] of replies) if (error) throw error;
    const [data, version, name, hist, tenantId, threadId] = (replies[0]?.[1] ?? []) as (
      string | null
    )[];
    return {
      data: data ?? null,
      version: version ?? null,
      messages: (replies[1]?.[1] ?? []) as string[],
      messagesName: name ?? null,
      history: { hist: hist ?? null, tenantId: tenantId ?? null, threadId: threadId ?? null },
    };
  }

  /**
   * The thread history a run references (history-reference.ts; [] = none): one read of the
   * thread's list.
   */
  async referencedHistory(history: HistoryFields): Promise<Message[]> {
    const ref = decodeReference(history.hist);
    if (ref === null || history.tenantId === null || history.threadId === null) return [];
    return readReferencedHistory(this.redis, this.keys, history.tenantId, history.threadId, ref);
  }

  /** The run's whole message list: its referenced history, then its own list (`own`, JSON). */
  async withHistory(
    history: HistoryFields,
    own: readonly string[],
  ): Promise<readonly string[] | { readonly parsed: readonly Message[] }> {
    if (history.hist === null) return own;
    const before = await this.referencedHistory(history);
    return { parsed: [...before, ...own.map((m) => JSON.parse(m) as Message)] };
  }

  /** load(), but null when the run belongs to another tenant (no existence leak). */
  async loadForTenant(runId: string, tenantId: string): Promise<StoredCheckpoint | null> {
    // The tenant field alone first: another tenant's run must cost what a missing one costs,
    // whatever the size of its checkpoint.
    const key = this.keys.run(runId).cp;
    if ((await this.redis.hget(key, 'tenant')) !== tenantId) return null;
    return this.load(runId);
  }

  /**
   * The checkpoint without its messages, of a run of this tenant (null: no such run, or another
   * tenant's): what a reader following a run tree needs (status, calls, parent, decision log),
   * in one read that leaves the conversation (the `:messages` list) alone.
   */
  async loadHeadForTenant(runId: string, tenantId: string): Promise<StoredHead | null> {
    // The tenant field alone first, as loadForTenant: another tenant's checkpoint is never read.
    const key = this.keys.run(runId).cp;
    if ((await this.redis.hget(key, 'tenant')) !== tenantId) return null;
    const [data, version] = await this.redis.hmget(key, 'data', 'version');
    return this.decodeStored(runId, data ?? null, version ?? null, { parsed: [] });
  }

  /** The run's tenant, status and last seq in one read (null when it does not exist). */
  async progress(runId: string): Promise<RunProgress | null> {
    const [tenant, status, seq] = await this.redis.hmget(
      this.keys.run(runId).cp,
      'tenant',
      'status',
      'seq',
    );
    if (!tenant || !status) return null;
    return { tenantId: tenant, status: status as RunStatus, lastSeq: seq ? Number(seq) : 0 };
  }

  /** The run's summary fields, without its checkpoint (null when it does not exist). */
  async meta(runId: string): Promise<RunMeta | null> {
    return decodeMeta(await this.redis.hmget(this.keys.run(runId).cp, ...META_FIELDS));
  }

  runKeys(runId: string): RunKeys {
    return this.keys.run(runId);
  }

  /** Events with seq > afterSeq, in order (at most `limit`). */
  async readEvents(runId: string, afterSeq = 0, limit?: number): Promise<RunEvent[]> {
    const key = this.keys.run(runId).events;
    const after = Math.max(0, Math.floor(afterSeq));
    // An entry's id is the seq of its last event: every entry holding an event after `after`
    // has an id above it. Each entry holds at least one event, so `limit` entries suffice.
    const start = `(0-${after}`;
    const entries =
      limit === undefined
        ? await this.redis.xrange(key, start, '+')
        : limit <= 0
          ? []
          : await this.redis.xrange(key, start, '+', 'COUNT', Math.floor(limit));
    const events: RunEvent[] = [];
    for (const [, fields] of entries)
      for (const event of decodeEventPayload(streamField(fields)))
        if (event.seq > after) events.push(event);
    return limit === undefined ? events : events.slice(0, Math.floor(limit));
  }

  /** Seq of the run's last event (0 when none or no such run). */
  async lastSeq(runId: string): Promise<number> {
    const seq = await this.redis.hget(this.keys.run(runId).cp, 'seq');
    return seq === null ? 0 : Number(seq);
  }

  /**
   * lastSeq() of a run of this tenant, read with its tenant field in one round trip (an event
   * stream's opening needs both, not the checkpoint); null when the run does not exist or belongs
   * to another tenant (no existence leak, as loadForTenant).
   */
  async lastSeqForTenant(runId: string, tenantId: string): Promise<number | null> {
    const [tenant, seq] = await this.redis.hmget(this.keys.run(runId).cp, 'tenant', 'seq');
    if (tenant !== tenantId) return null;
    return seq === null || seq === undefined ? 0 : Number(seq);
  }

  /** Trigger of the last commit (observability); null when none or no such run. */
  async lastTrigger(runId: string): Promise<CheckpointTrigger | null> {
    const t = await this.redis.hget(this.keys.run(runId).cp, 'lastTrigger');
    return t === null || t === '' ? null : (t as CheckpointTrigger);
  }

  /**
   * A tenant's runs, newest first, optionally filtered. Reads the thread's index when threadId is
   * given, else the tenant's; index entries whose run has expired are removed on the way.
   */
  async listRuns(query: ListRunsQuery): Promise<RunPage> {
    const limit = Math.floor(query.limit);
    if (!(limit >= 1 && limit <= MAX_LIMIT))
      throw new Error(`listRuns: limit must be in 1..${MAX_LIMIT}`);
    const indexKey =
      query.threadId === undefined
        ? this.keys.tenantRuns(query.tenantId)
        : this.keys.thread(query.tenantId, query.threadId).runs;
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const batch = Math.max(limit * 2, 50);
    const found: RunSummary[] = [];
    let offset = 0;
    for (;;) {
      // ZRANGE key max min BYSCORE REV LIMIT offset count WITHSCORES
      const raw = await this.redis.zrange(
        indexKey,
        after ? after.createdAt : '+inf',
        '-inf',
        'BYSCORE',
        'REV',
        'LIMIT',
        offset,
        batch,
        'WITHSCORES',
      );
      const candidates: { runId: string; createdAt: number }[] = [];
      for (let i = 0; i < raw.length; i += 2) {
        const runId = raw[i] as string;
        const createdAt = Number(raw[i + 1]);
        // same createdAt as the cursor: only run ids below the cursor's come after it
        if (after && createdAt === after.createdAt && runId >= after.runId) continue;
        candidates.push({ runId, createdAt });
      }
      const fields = await Promise.all(
        candidates.map((c) =>
          this.redis.hmget(
            this.keys.run(c.runId).cp,
            'tenant',
            'status',
            'agent',
            'threadId',
            'updatedAt',
            'fkey',
            'aver',
          ),
        ),
      );
      const expired: string[] = [];
      candidates.forEach((c, i) => {
        const [tenant, status, agent, threadId, updatedAt, fkey, aver] = fields[i] ?? [];
        if (tenant === null || tenant === undefined) {
          expired.push(c.runId);
          return;
        }
        if (tenant !== query.tenantId) return;
        if (query.status !== undefined && status !== query.status) return;
        if (query.agent !== undefined && agent !== query.agent) return;
        if (query.threadId !== undefined && threadId !== query.threadId) return;
        if (query.fairnessKey !== undefined && (fkey ?? tenant) !== query.fairnessKey) return;
        if (query.agentVersion !== undefined && aver !== query.agentVersion) return;
        found.push({
          runId: c.runId,
          tenantId: tenant,
          agent: agent ?? '',
          threadId: threadId ?? '',
          status: status as RunStatus,
          createdAt: c.createdAt,
          updatedAt: Number(updatedAt),
          ...(aver ? { agentVersion: aver } : {}),
        });
      });
      await this.index.pruneListed(indexKey, expired);
      // the removed entries were inside the scanned window: the next window starts that much earlier
      offset += raw.length / 2 - expired.length;
      if (found.length > limit || raw.length / 2 < batch) break;
    }
    const runs = found.slice(0, limit);
    const last = runs[runs.length - 1];
    const nextCursor =
      found.length > limit && last ? encodeCursor(last.createdAt, last.runId) : null;
    return { runs, nextCursor };
  }

  /**
   * A checkpoint read by another script (e.g. the lease's acquire-and-load); `validate`: a full
   * CheckpointSchema parse (default: the store's validateOnLoad).
   */
  decodeStored(
    runId: string,
    data: string | null,
    version: string | null,
    messages: readonly string[] | { readonly parsed: readonly Message[] },
    validate: boolean = this.validateOnLoad,
  ): StoredCheckpoint | null {
    const decoded = decodeCheckpoint(runId, data, version, messages, validate);
    if (!decoded.ok)
      throw decoded.newer === undefined
        ? new CorruptCheckpointError(runId, decoded.why)
        : new NewerFormatError('checkpoint', decoded.newer, `run ${runId}`);
    return decoded.stored;
  }
}

function streamField(fields: string[]): string {
  for (let i = 0; i + 1 < fields.length; i += 2)
    if (fields[i] === 'e') return fields[i + 1] as string;
  throw new Error('stream entry without field e');
}
