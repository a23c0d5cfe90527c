import type {
  Checkpoint,
  CheckpointTrigger,
  EventBody,
  Message,
  RunEvent,
  RunStatus,
} from '@baton/protocol';
import { RunDoneError, VersionConflictError, activityOf } from '@baton/core';
import type {
  ArchivedRunSummary,
  CommitResult,
  RunListFilters,
  RunStore,
  StoredCheckpoint,
} from '@baton/core';
import { BatonKeys, type RunKeys } from './keys.ts';
import { defineScript, type LuaScript, type RedisClient } from './scripts.ts';
import {
  CREATE_RESENT,
  FENCED,
  FINISHED,
  MESSAGES_OUT_OF_STEP,
  NO_RUN,
  RunRecordScripts,
  VERSION_MOVED,
  WRITTEN,
} from '../run-record/run-record-scripts.ts';
import { RunIndex } from '../run-record/run-index.ts';
import {
  META_FIELDS,
  awaitingFields,
  bodyTail,
  checkpointData,
  decodeCheckpoint,
  decodeMeta,
  envelopeIds,
  parseEvents,
  rebuiltEvents,
  sharedPrefix,
} from '../run-record/checkpoint-codec.ts';
import type {
  HistoryFields,
  RunMeta,
  RunProgress,
  StoredHead,
} from '../run-record/checkpoint-codec.ts';
import {
  decodeReference,
  encodeReference,
  readReferencedHistory,
  type HistoryReference,
} from '../run-record/history-reference.ts';

export type { RunMeta };
import { decodeEventPayload } from './event-payload.ts';
import { EventMetricsRecorder } from './event-metrics.ts';
import { randomToken } from '../random-token.ts';
import { CorruptCheckpointError } from '../errors/corrupt-checkpoint-error.ts';
import { InvalidCursorError } from '../errors/invalid-cursor-error.ts';
import { LeaseLostError } from '../errors/lease-lost-error.ts';

export { InvalidCursorError, LeaseLostError };

export interface RedisRunStoreOptions {
  readonly redis: RedisClient;
  /** Key prefix (default 'baton'). */
  readonly prefix?: string;
  /** Clock for the events' `at`. */
  readonly now: () => number;
  /** TTL of a run's keys once its status is 'done' (default 86400 = 1 day). */
  readonly retentionSeconds?: number;
  /** Parse every loaded checkpoint with CheckpointSchema (debugging; off on the hot path). */
  readonly validateOnLoad?: boolean;
}

/** A run as lists show it: the same shape hot (here) and archived (the archive port's). */
export type RunSummary = ArchivedRunSummary;

export interface ListRunsQuery extends RunListFilters {
  /** Opaque cursor from a previous page's nextCursor. */
  readonly cursor?: string | null;
  readonly limit: number;
}

export interface RunPage {
  /** Newest first (createdAt desc, then runId desc). */
  readonly runs: RunSummary[];
  /** Null when there is nothing after this page. */
  readonly nextCursor: string | null;
}

/** What a commit adds to the RunStore contract (see RedisRunStore.commit). */
export interface CommitOptions {
  /** The writer's lease token; '' (the default) = an unfenced control-plane write. */
  readonly fence?: string | undefined;
  /**
   * The lease's TTL: release it after the commit unless someone asked for the run meanwhile
   * (then the mark is cleared and the lease renewed). Absent: keep the lease.
   */
  readonly releaseTtlMs?: number | undefined;
  /** The checkpoint this one was made from: the messages it shares are not written again. */
  readonly base?: Checkpoint | undefined;
  /** The step job about to wait for this round's tool jobs (fan-out.ts reads it back). */
  readonly parentRecord?: string | undefined;
}

/** One append of an inference attempt's deltas (see RedisRunStore.appendDeltas). */
export interface DeltaAttempt {
  readonly step: number;
  /** Names the attempt: a new nonce for the same step is a retry (clients get `reset` first). */
  readonly nonce: string;
  readonly reset: EventBody;
  /** How many appends of this attempt were sent before this one. */
  readonly index: number;
}

/** What the reconciler needs to know about a run without parsing its checkpoint. */

const MAX_LIMIT = 1000;

/** KEYS: a run's cp hash. ARGV: field, value, ...: set only while the hash exists (1), else 0. */
const SET_IF_RECORDED_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`;

/**
 * RunStore + EventAppender on Redis. Same contract as MemoryRunStore: compare-and-set on the
 * version, events sequenced gaplessly from 1 per run and stored atomically with the commit,
 * envelope {seq, runId, threadId, turnId, at} followed by the body's fields.
 */
export class RedisRunStore implements RunStore {
  readonly keys: BatonKeys;
  /** Every write to the indexes that list runs (run-record/run-index.ts). */
  readonly index: RunIndex;
  /** Event metrics of the events this store commits (flushed to Redis; close() it on shutdown). */
  readonly metrics: EventMetricsRecorder;
  private readonly redis: RedisClient;
  private readonly now: () => number;
  private readonly retentionSeconds: number;
  private readonly validateOnLoad: boolean;
  private readonly scripts: RunRecordScripts;

  /** HSET of fields onto a run's `cp` hash only while it exists. */
  private readonly setIfRecorded: LuaScript<[cp: string], string[], number>;

  constructor(opts: RedisRunStoreOptions) {
    this.redis = opts.redis;
    this.keys = new BatonKeys(opts.prefix);
    this.now = opts.now;
    this.retentionSeconds = opts.retentionSeconds ?? 86_400;
    if (!Number.isInteger(this.retentionSeconds) || this.retentionSeconds <= 0)
      throw new Error('RedisRunStore: retentionSeconds must be a positive integer');
    this.validateOnLoad = opts.validateOnLoad ?? false;
    this.scripts = new RunRecordScripts(this.redis);
    this.index = new RunIndex(this.redis, this.keys);
    this.setIfRecorded = defineScript(this.redis, 'batonRunSetIfRecorded', 1, SET_IF_RECORDED_LUA);
    this.metrics = new EventMetricsRecorder(this.redis, this.keys.eventMetrics);
  }

  /** Pub/sub channel of a run (RunEventSource, used by RunEventSubscriber). */
  channelOf(runId: string): string {
    return this.keys.channel(runId);
  }

  /**
   * `threadIndexed`: the run is in its thread's run index already (acquiring the thread puts it
   * there), so only the tenant's index is written here.
   */
  async create(
    checkpoint: Checkpoint,
    events: readonly EventBody[],
    opts: {
      readonly threadIndexed?: boolean;
      /**
       * Where the checkpoint's history (its first historyLength messages) stands in the thread's
       * list (ThreadSnapshot.reference): the run references it instead of copying it.
       */
      readonly history?: HistoryReference | undefined;
    } = {},
  ): Promise<CommitResult> {
    const id = checkpoint.identity;
    const ref =
      opts.history !== undefined &&
      opts.history.count > 0 &&
      opts.history.count === checkpoint.historyLength
        ? opts.history
        : null;
    const k = this.keys.run(id.runId);
    const at = this.atMs();
    const reply = await this.scripts.create(k, {
      data: checkpointData(checkpoint),
      status: checkpoint.status,
      tenant: id.tenantId,
      agent: id.agent,
      threadId: id.threadId,
      createdAt: checkpoint.createdAt,
      updatedAt: checkpoint.updatedAt,
      env: envelopeIds(checkpoint),
      at: JSON.stringify(at),
      retention: this.retentionSeconds,
      activity: activityOf(checkpoint),
      messagesToken: randomToken(),
      hist: ref === null ? '' : encodeReference(ref),
      messages: checkpoint.messages
        .slice(ref === null ? 0 : ref.count)
        .map((m) => JSON.stringify(m)),
      bodies: events.map(bodyTail),
    });
    if (reply[0] !== WRITTEN && reply[0] !== CREATE_RESENT)
      throw new VersionConflictError(id.runId, 0, reply[1]);
    if (reply[0] === WRITTEN) this.metrics.record(id.runId, at, events);
    await this.completeCreate(checkpoint, opts.threadIndexed === true);
    const payload = reply[2];
    return {
      version: 1,
      events:
        reply[0] === CREATE_RESENT
          ? payload === undefined
            ? []
            : decodeEventPayload(payload)
          : parseEvents(reply),
    };
  }

  /**
   * The writes of a create that follow the run's own, each idempotent: done by create, and again
   * by a resend of a create that failed after the run was written (RunService.resumeCreated), so
   * no error in between leaves a run without them. `threadIndexed`: as for create.
   */
  async completeCreate(
    checkpoint: Pick<Checkpoint, 'identity' | 'createdAt' | 'status'>,
    threadIndexed = false,
  ): Promise<void> {
    const id = checkpoint.identity;
    // Read with the meta by whoever enqueues the run's jobs without its checkpoint (fairness).
    // Written apart from the create script: a crash in between costs the run its priority on
    // those jobs (the default level) until a resend writes it, never the run. Not for a finished
    // run (none of its jobs is to come).
    // The run lists read `fkey` too (GET /v1/runs?fairnessKey=), so a finished run gets it as
    // well, but only onto a record that still exists: a resend after the record expired must
    // not leave a stray hash with no TTL behind.
    if (id.priority !== undefined || id.fairnessKey !== undefined)
      await this.setIfRecorded(
        [this.keys.run(id.runId).cp],
        [
          ...(id.priority === undefined ? [] : ['priority', String(id.priority)]),
          ...(id.fairnessKey === undefined ? [] : ['fkey', id.fairnessKey]),
        ],
      );
    // Indexes live in other slots (tenant, thread), so they are written after the run exists.
    // ZADD is idempotent; a crash in between leaves an unlisted (but fully working) run, listed
    // by the resend of its request.
    await this.index.listCreated(checkpoint, threadIndexed);
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

  /**
   * Compare-and-set on the version. With `fence` (the writer's lease token) the write is refused
   * inside the script unless that lease is still the run's current one (LeaseLostError); without,
   * it is a control-plane write (decisions, cancel requests) that only needs the version. A run
   * that is done takes no write at all (RunDoneError).
   */
  async commit(
    runId: string,
    expectedVersion: number,
    checkpoint: Checkpoint,
    events: readonly EventBody[],
    trigger: CheckpointTrigger | null,
    options: CommitOptions = {},
  ): Promise<
    CommitResult & {
      readonly released?: boolean;
      readonly failedJobs?: readonly string[];
      /** Whether the run has a webhook configuration: told by the commit that finishes it. */
      readonly webhook?: boolean;
    }
  > {
    if (checkpoint.identity.runId !== runId)
      throw new Error(
        `commit: checkpoint belongs to run ${checkpoint.identity.runId}, not ${runId}`,
      );
    const { fence = '', releaseTtlMs, base, parentRecord } = options;
    const k = this.keys.run(runId);
    // Messages are append-only in practice (transitions copy the array and never edit a message
    // in place), so a commit whose base shares every earlier message writes only the new ones.
    const from = base ? sharedPrefix(base.messages, checkpoint.messages) : 0;
    const mode = base && from === base.messages.length ? 'append' : 'replace';
    const call = (m: 'append' | 'replace', after: number) =>
      this.scripts.commit(k, {
        expectedVersion,
        fence,
        data,
        status: checkpoint.status,
        activity: activityOf(checkpoint),
        updatedAt: checkpoint.updatedAt,
        trigger: trigger ?? '',
        awaiting: awaitingFields(checkpoint),
        at,
        retention: this.retentionSeconds,
        release: releaseTtlMs === undefined ? '' : String(releaseTtlMs),
        messagesToken: m === 'replace' ? randomToken() : '',
        messagesMode: m,
        base: after,
        parentRecord: parentRecord ?? '',
        messages: checkpoint.messages.slice(after).map((msg) => JSON.stringify(msg)),
        bodies,
        webhookConfig: this.keys.webhook(runId).config,
      });
    const data = checkpointData(checkpoint);
    const bodies = events.map(bodyTail);
    const atMs = this.atMs();
    const at = JSON.stringify(atMs);
    let reply = await call(mode, mode === 'append' ? from : 0);
    // The stored list was not what the base says (a run written before messages had their own
    // list): write the whole list instead.
    if (reply[0] === MESSAGES_OUT_OF_STEP) reply = await call('replace', 0);
    refused(runId, expectedVersion, reply);
    this.metrics.record(runId, atMs, events);
    const released = reply[2];
    const lastSeq = Number(reply[3]);
    let appended: RunEvent[] | undefined;
    return {
      version: reply[1],
      get events() {
        return (appended ??= rebuiltEvents(envelopeIds(checkpoint), at, bodies, lastSeq));
      },
      ...(released === -1 ? {} : { released: released === 1 }),
      ...(Array.isArray(reply[4]) ? { failedJobs: reply[4] as string[] } : {}),
      ...(reply[5] === undefined ? {} : { webhook: reply[5] === 1 }),
    };
  }

  /**
   * Text/reasoning deltas of the inference attempt `marker` ('<step>:<nonce>'), fenced on the
   * lease. The first append of a new attempt of a step that already streamed appends `reset`
   * before them. `attempt.index` numbers the attempt's appends from 0, in the order they are
   * sent: an append Redis already holds (sent again after a dropped connection) writes nothing
   * and returns no event.
   */
  async appendDeltas(
    runId: string,
    fence: string,
    attempt: DeltaAttempt,
    events: readonly EventBody[],
  ): Promise<readonly RunEvent[]> {
    if (!Number.isSafeInteger(attempt.index) || attempt.index < 0)
      throw new Error('appendDeltas: attempt.index must be a non-negative integer');
    const k = this.keys.run(runId);
    const reply = await this.scripts.append(k, {
      fence,
      at: this.atArg(),
      marker: `${attempt.step}:${attempt.nonce}`,
      stepPrefix: `${attempt.step}:`,
      resetBody: bodyTail(attempt.reset),
      index: attempt.index,
      bodies: events.map(bodyTail),
    });
    refused(runId, reply[1], reply);
    return parseEvents(reply);
  }

  /**
   * Deletes a finished run of `tenantId` and its index entries. 'not_found' for a missing run or
   * another tenant's (no existence leak); 'active' for a run that has not finished.
   */
  async deleteRun(runId: string, tenantId: string): Promise<'deleted' | 'not_found' | 'active'> {
    const k = this.keys.run(runId);
    const threadId = await this.redis.hget(k.cp, 'threadId');
    const reply = await this.scripts.delete(k, tenantId);
    if (reply === 0) return 'not_found';
    if (reply === -1) return 'active';
    await this.dropFromIndexes(tenantId, threadId ?? '', runId);
    return 'deleted';
  }

  /** Removes a run from the tenant and thread indexes (its keys are gone or going). */
  async dropFromIndexes(tenantId: string, threadId: string, runId: string): Promise<void> {
    await this.index.dropEverywhere(tenantId, threadId, runId);
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
          ),
        ),
      );
      const expired: string[] = [];
      candidates.forEach((c, i) => {
        const [tenant, status, agent, threadId, updatedAt, fkey] = fields[i] ?? [];
        if (tenant === null || tenant === undefined) {
          expired.push(c.runId);
          return;
        }
        if (tenant !== query.tenantId) return;
        if (query.status !== undefined && status !== query.status) return;
        if (query.agent !== undefined && agent !== query.agent) return;
        if (query.threadId !== undefined && threadId !== query.threadId) return;
        if (query.fairnessKey !== undefined && (fkey ?? tenant) !== query.fairnessKey) return;
        found.push({
          runId: c.runId,
          tenantId: tenant,
          agent: agent ?? '',
          threadId: threadId ?? '',
          status: status as RunStatus,
          createdAt: c.createdAt,
          updatedAt: Number(updatedAt),
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

  private atArg(): string {
    return JSON.stringify(this.atMs());
  }

  private atMs(): number {
    const at = this.now();
    if (!Number.isFinite(at)) throw new Error('RedisRunStore: now() must return a finite number');
    return at;
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
    if (!decoded.ok) throw new CorruptCheckpointError(runId, decoded.why);
    return decoded.stored;
  }
}

/** Throws the typed error for a refused write (see guard_write in run-record); returns otherwise. */
function refused(
  runId: string,
  expectedVersion: number,
  reply: readonly [number, number, ...unknown[]],
): void {
  switch (reply[0]) {
    case WRITTEN:
      return;
    case VERSION_MOVED:
      throw new VersionConflictError(runId, expectedVersion, reply[1]);
    case NO_RUN:
      throw new VersionConflictError(runId, expectedVersion, null);
    case FENCED:
      throw new LeaseLostError(runId);
    case FINISHED:
      throw new RunDoneError(runId);
    default:
      throw new Error(`run ${runId}: unexpected script reply ${JSON.stringify(reply)}`);
  }
}

function streamField(fields: string[]): string {
  for (let i = 0; i + 1 < fields.length; i += 2)
    if (fields[i] === 'e') return fields[i + 1] as string;
  throw new Error('stream entry without field e');
}

export function encodeCursor(createdAt: number, runId: string): string {
  return Buffer.from(JSON.stringify([createdAt, runId]), 'utf8').toString('base64url');
}

/**
 * The cursor as encodeCursor wrote it, or InvalidCursorError: a creation time in ms (a whole
 * number a bigint column holds) and a run id PostgreSQL can compare (no NUL). Checked here, the
 * one decoder of both list paths, before either store is asked: the archive's would refuse
 * [1.5, "x"] or 2^63 (a 500 once), where Redis's answered some page.
 */
export function decodeCursor(cursor: string): { createdAt: number; runId: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      (value[0] as number) >= 0 &&
      typeof value[1] === 'string' &&
      value[1].length <= 512 &&
      !value[1].includes('\0')
    )
      return { createdAt: value[0] as number, runId: value[1] };
  } catch {
    // fall through
  }
  throw new InvalidCursorError();
}
