import type { Checkpoint, CheckpointTrigger, EventBody, RunEvent } from '@baton/protocol';
import { RunDoneError, VersionConflictError, activityOf } from '@baton/core';
import type { CommitResult, RunStore } from '@baton/core';
import { BatonKeys } from '../redis/keys.ts';
import { defineScript, type LuaScript, type RedisClient } from '../redis/scripts.ts';
import {
  CREATE_RESENT,
  FENCED,
  FINISHED,
  MESSAGES_OUT_OF_STEP,
  NO_RUN,
  RunRecordScripts,
  VERSION_MOVED,
  WRITTEN,
} from './run-record-scripts.ts';
import { RunIndex } from './run-index.ts';
import {
  awaitingFields,
  bodyTail,
  checkpointData,
  envelopeIds,
  parseEvents,
  rebuiltEvents,
  sharedPrefix,
} from './checkpoint-codec.ts';
import { encodeReference } from './history-reference.ts';
import type { HistoryReference } from '../redis/thread-history-reference.ts';
import { RunStoreReads } from './run-store-reads.ts';
import { RunBookkeeping } from './run-bookkeeping.ts';
import { decodeEventPayload } from '../redis/event-payload.ts';
import { EventMetricsRecorder } from '../redis/event-metrics.ts';
import { randomToken } from '../random-token.ts';
import { LeaseLostError } from '../errors/lease-lost-error.ts';

export { LeaseLostError };

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
export class RedisRunStore extends RunStoreReads implements RunStore {
  /** Event metrics of the events this store commits (flushed to Redis; close() it on shutdown). */
  readonly metrics: EventMetricsRecorder;
  /** The run's keys beside its checkpoint: failed jobs, parent record, stall counts (named). */
  readonly bookkeeping: RunBookkeeping;
  private readonly now: () => number;
  private readonly retentionSeconds: number;
  private readonly scripts: RunRecordScripts;

  /** HSET of fields onto a run's `cp` hash only while it exists. */
  private readonly setIfRecorded: LuaScript<[cp: string], string[], number>;

  constructor(opts: RedisRunStoreOptions) {
    const keys = new BatonKeys(opts.prefix);
    super(
      opts.redis,
      keys,
      // The process's one RunIndex: the committer, the service, child runs, the archiver and the
      // reconciler write the indexes through store.index.
      new RunIndex(opts.redis, keys),
      opts.validateOnLoad ?? false,
    );
    this.now = opts.now;
    this.retentionSeconds = opts.retentionSeconds ?? 86_400;
    if (!Number.isInteger(this.retentionSeconds) || this.retentionSeconds <= 0)
      throw new Error('RedisRunStore: retentionSeconds must be a positive integer');
    this.scripts = new RunRecordScripts(this.redis);
    this.setIfRecorded = defineScript(this.redis, 'batonRunSetIfRecorded', 1, SET_IF_RECORDED_LUA);
    this.metrics = new EventMetricsRecorder(this.redis, this.keys.eventMetrics);
    this.bookkeeping = new RunBookkeeping(this.redis, this.keys);
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
      agentVersion: id.agentVersion ?? '',
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
    // `aver` (its agent version) is written by the create script itself; here only alongside
    // the others (a run of a release before versions had none).
    if (id.priority !== undefined || id.fairnessKey !== undefined)
      await this.setIfRecorded(
        [this.keys.run(id.runId).cp],
        [
          ...(id.priority === undefined ? [] : ['priority', String(id.priority)]),
          ...(id.fairnessKey === undefined ? [] : ['fkey', id.fairnessKey]),
          ...(id.agentVersion === undefined ? [] : ['aver', id.agentVersion]),
        ],
      );
    // Indexes live in other slots (tenant, thread), so they are written after the run exists.
    // ZADD is idempotent; a crash in between leaves an unlisted (but fully working) run, listed
    // by the resend of its request.
    await this.index.listCreated(checkpoint, threadIndexed);
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

  private atArg(): string {
    return JSON.stringify(this.atMs());
  }

  private atMs(): number {
    const at = this.now();
    if (!Number.isFinite(at)) throw new Error('RedisRunStore: now() must return a finite number');
    return at;
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
