import type { HolderNote } from '../internals/bullmq/job-hash.ts';
import { randomToken } from '../random-token.ts';
import type { BatonKeys } from '../redis/keys.ts';
import type { Message } from '@baton/protocol';
import type { StoredCheckpoint } from '@baton/core';
import { LeaseLostError, type RedisRunStore } from './redis-run-store.ts';
import type { RedisClient } from '../redis/scripts.ts';
import { RunRecordScripts } from './run-record-scripts.ts';
import {
  decodeAwaited,
  type AwaitedResults,
  type HistoryFields,
  type StoredFields,
} from './checkpoint-codec.ts';

export type { AwaitedResults, StoredFields };

/*
 * Single-flight per run, with fencing. Exactly one job (step or tool drain) may advance a run at a
 * time; a job that finds the lease taken leaves a "pending" mark instead of waiting, and the holder
 * sees the mark when it releases and makes another pass. So no wake-up is ever lost and no worker
 * blocks on another. A crashed or paused holder's lease expires after its TTL.
 *
 * The token is also the fencing token: every write a worker makes for the run (commit, delta
 * append) carries it and the write script refuses it unless it is still the run's lease. A holder
 * that was paused past its TTL therefore cannot write anything when it wakes up, and learns that
 * it lost the run from the first refused write or the first refused renewal, whichever comes first.
 *
 * The holder's job is noted in the run's checkpoint hash (field `driver`, '<queue>:<jobId>'), so
 * that when the holder dies the reconciler can ask whether that job is still alive (BullMQ moves
 * a stalled job back to wait) before it schedules a pass of its own.
 *
 * The scripts are in run-record/lua/lease-scripts.ts (called through RunRecordScripts).
 */

export interface Lease {
  readonly runId: string;
  /** The fencing token every write for the run must carry. */
  readonly token: string;
  /** How long the lease lives without a renewal. */
  readonly ttlMs: number;
  /** Aborts when the lease is lost: in-flight model calls and tools stop at once. */
  readonly signal: AbortSignal;
  readonly lost: boolean;
  /** Records that the lease is gone (a fenced write was refused) and aborts `signal`. */
  markLost(why: string): void;
  /** Throws LeaseLostError when the lease is lost. */
  check(): void;
  /**
   * A commit released the lease (`released`) or, because someone asked for the run meanwhile,
   * cleared the mark and renewed it (false: the caller must look at the run again).
   */
  settle(released: boolean): void;
  /** Releases; true when another job asked for the run meanwhile (the caller must reschedule). */
  release(): Promise<boolean>;
  /**
   * release(), and when another job asked for the run meanwhile its stored fields, read in the
   * same round trip (null: nobody asked, or released before).
   */
  releaseAndRead(): Promise<StoredFields | null>;
  /**
   * Releases unless another job asked for the run meanwhile; then the mark is cleared, the lease
   * kept, and false returned: the caller must look at the run again. Throws LeaseLostError when
   * the lease is not ours any more.
   */
  releaseIfIdle(): Promise<boolean>;
}

/** A result to record in the run's mailbox before the lease is tried (see acquireAndLoad). */
export interface RecordFirst {
  readonly field: string;
  readonly json: string;
  readonly ttlSeconds: number;
  /**
   * Take nothing when this result completes the round (every awaited call has one): the
   * recorder is a child job whose parent step job BullMQ re-enters next, and applies them.
   */
  readonly deferIfComplete?: boolean;
}

/**
 * Messages a reader kept of a run's own list (after its referenced thread history: see
 * history-reference.ts): the list's name ('mepoch') and how many.
 */
export interface KnownMessages {
  readonly name: string;
  readonly count: number;
}

export interface AcquiredAndLoaded {
  readonly lease: Lease;
  readonly data: string | null;
  readonly version: string | null;
  /** The stored messages from index `messagesFrom` on (0: all of them). */
  readonly messages: string[];
  readonly messagesFrom: number;
  /** The list's name ('mepoch'); null for a run written before lists were named. */
  readonly messagesName: string | null;
  /** Where the run's referenced thread history is (its list holds what follows it). */
  readonly history: HistoryFields;
  /** null: the run was written before `awaiting` existed (read the mailbox instead). */
  readonly awaited: AwaitedResults | null;
}

/**
 * What the worker keeps of runs' message lists between passes (its MessageCache): what it knows
 * of a run's list (`K` carries whatever it needs besides name and count), whether that is
 * outdated, the whole list from what an acquire read, and forgetting a run.
 */
export interface MessageKeeper<K extends KnownMessages = KnownMessages> {
  known(runId: string): K | undefined;
  outdated(kept: K): boolean;
  /**
   * The run's whole message list: `history` (its referenced thread history, read only when
   * `from` is 0), then its own list, read from index `from` on (`tail`, JSON).
   */
  resolve(
    runId: string,
    kept: K | undefined,
    name: string | null,
    from: number,
    tail: readonly string[],
    history: readonly Message[],
  ): Message[];
  forget(runId: string): void;
}

/**
 * How the leases decode what their scripts read (the run store: its validateOnLoad setting, and
 * the thread history a run references).
 */
export type CheckpointReader = Pick<
  RedisRunStore,
  'decodeStored' | 'readStored' | 'referencedHistory' | 'withHistory'
>;

/**
 * A lease taken with the run's checkpoint decoded (`state` null: no such run), or, when reading
 * or decoding it failed, the lease and the error: the caller releases the lease, then throws it.
 */
export type DecodedAcquire =
  | {
      readonly lease: Lease;
      readonly state: StoredCheckpoint | null;
      readonly awaited: AwaitedResults | null;
    }
  | { readonly lease: Lease; readonly failed: unknown };

export class RunLeases {
  private readonly scripts: RunRecordScripts;
  private readonly keys: BatonKeys;
  private readonly reader: CheckpointReader | undefined;
  readonly ttlMs: number;

  /** `reader`: needed by acquireDecoded and releaseDecoded only. */
  constructor(redis: RedisClient, keys: BatonKeys, ttlMs: number, reader?: CheckpointReader) {
    this.keys = keys;
    this.ttlMs = ttlMs;
    this.scripts = new RunRecordScripts(redis);
    this.reader = reader;
  }

  private checkpointReader(): CheckpointReader {
    if (!this.reader) throw new Error('RunLeases: constructed without a checkpoint reader');
    return this.reader;
  }

  /**
   * acquireAndLoad() with the checkpoint decoded. With `messages`, the acquire reads only the
   * messages added since what it kept of the run's list; a prefix it kept before a dropped
   * connection is not completed by a tail: the run is read whole instead (the lease is ours, so
   * that read is consistent).
   */
  async acquireDecoded<K extends KnownMessages>(
    runId: string,
    opts: {
      readonly driver: string;
      readonly record?: RecordFirst | undefined;
      readonly messages?: MessageKeeper<K> | undefined;
      /** The job attempt's holder note, written in the same round trip (see HolderNote). */
      readonly note?: HolderNote | undefined;
    },
  ): Promise<{ acquired: DecodedAcquire | null; onRecord: string | null; deferred: boolean }> {
    const { messages } = opts;
    const kept = messages?.known(runId);
    const { acquired, onRecord, deferred } = await this.acquireAndLoad(
      runId,
      opts.driver,
      opts.record,
      kept,
      opts.note,
    );
    if (!acquired) return { acquired: null, onRecord, deferred };
    const { lease, awaited } = acquired;
    try {
      const reader = this.checkpointReader();
      const read =
        kept && messages?.outdated(kept) && acquired.messagesFrom > 0
          ? { ...(await reader.readStored(runId)), messagesFrom: 0 }
          : acquired;
      // The referenced history is read once per run and worker: a kept prefix includes it.
      const state = reader.decodeStored(
        runId,
        read.data,
        read.version,
        messages
          ? {
              parsed: messages.resolve(
                runId,
                kept,
                read.messagesName,
                read.messagesFrom,
                read.messages,
                read.messagesFrom === 0 ? await reader.referencedHistory(read.history) : [],
              ),
            }
          : await reader.withHistory(read.history, read.messages),
      );
      return { acquired: { lease, state, awaited }, onRecord, deferred };
    } catch (error) {
      messages?.forget(runId);
      return { acquired: { lease, failed: error }, onRecord, deferred };
    }
  }

  /**
   * lease.releaseAndRead() with the checkpoint decoded: the run as it is now when someone asked
   * for it meanwhile; null when nobody did (or it was released before, or the run is gone).
   */
  async releaseDecoded(lease: Lease): Promise<StoredCheckpoint | null> {
    const asked = await lease.releaseAndRead();
    if (!asked) return null;
    const reader = this.checkpointReader();
    return reader.decodeStored(
      lease.runId,
      asked.data,
      asked.version,
      await reader.withHistory(asked.history, asked.messages),
    );
  }

  /**
   * The lease, renewed in the background until released; null when another job holds it.
   * `driver` ('<queue>:<jobId>') names the job that will hold it.
   */
  async acquire(runId: string, driver = ''): Promise<Lease | null> {
    const token = randomToken();
    const ttl = this.ttlMs;
    // The pending mark outlives the lease so a holder that crashes still leaves it for the next one.
    const got = await this.scripts.leaseAcquire(this.keys.run(runId), {
      token,
      ttlMs: ttl,
      markTtlMs: ttl * 4,
      driver,
    });
    if (got !== 1) return null;
    return this.held(runId, token);
  }

  /**
   * acquire() and the run's stored checkpoint fields in one round trip: what every pass does
   * first. `data`/`version` are null when the run does not exist. `record`: a tool result to
   * record first (first writer wins); `onRecord` is the result that was there before, if any.
   */
  async acquireAndLoad(
    runId: string,
    driver = '',
    record?: RecordFirst,
    known?: KnownMessages,
    note?: HolderNote,
  ): Promise<{
    acquired: AcquiredAndLoaded | null;
    onRecord: string | null;
    /** The round is complete and left to the parent step job (see RecordFirst). */
    deferred: boolean;
  }> {
    const token = randomToken();
    const ttl = this.ttlMs;
    const reply = await this.scripts.leaseAcquireLoad(this.keys.run(runId), {
      token,
      ttlMs: ttl,
      markTtlMs: ttl * 4,
      driver,
      recordField: record?.field ?? '',
      recordJson: record?.json ?? '',
      recordTtlSeconds: record?.ttlSeconds ?? 0,
      deferIfComplete: record?.deferIfComplete === true ? '1' : '0',
      knownName: known?.name ?? '',
      knownCount: known?.count ?? 0,
      note,
    });
    if (reply[0] !== 1)
      return { acquired: null, onRecord: reply[1] ?? null, deferred: reply[0] === 2 };
    const [, data, version, list, onRecord, awaiting, recorded, name, from, hist, tenant, thread] =
      reply;
    return {
      acquired: {
        lease: this.held(runId, token),
        data: data ?? null,
        version: version ?? null,
        messages: list,
        messagesFrom: Number(from),
        messagesName: name ?? null,
        history: { hist: hist ?? null, tenantId: tenant ?? null, threadId: thread ?? null },
        awaited: decodeAwaited(awaiting, recorded),
      },
      onRecord: onRecord ?? null,
      deferred: false,
    };
  }

  private held(runId: string, token: string): Lease {
    const k = this.keys.run(runId);
    const ttl = this.ttlMs;
    const controller = new AbortController();
    // Until a renewal succeeds, the lease is only known to be ours for one TTL from now: a
    // renewal that cannot reach Redis before then must assume another worker took the run.
    let validUntil = Date.now() + ttl;
    let released = false;
    const markLost = (why: string): void => {
      if (controller.signal.aborted) return;
      clearInterval(timer);
      controller.abort(new LeaseLostError(runId, why));
    };
    const timer = setInterval(
      () => {
        if (Date.now() >= validUntil) {
          markLost('lease expired before it could be renewed');
          return;
        }
        const attemptAt = Date.now();
        this.scripts.leaseRenew(k, token, ttl).then(
          (ok) => {
            if (ok === 1) validUntil = attemptAt + ttl;
            else markLost('renewal refused: another worker holds the run');
          },
          () => {
            if (Date.now() >= validUntil) markLost('renewal failed until the lease expired');
          },
        );
      },
      Math.max(50, Math.floor(ttl / 3)),
    );
    timer.unref();
    const stop = (): void => {
      released = true;
      clearInterval(timer);
    };
    const lease: Lease = {
      runId,
      token,
      ttlMs: ttl,
      signal: controller.signal,
      get lost() {
        return controller.signal.aborted;
      },
      markLost,
      settle: (releasedByCommit) => {
        if (releasedByCommit) stop();
        else validUntil = Date.now() + ttl;
      },
      check: () => {
        if (controller.signal.aborted) throw new LeaseLostError(runId);
      },
      release: async () => {
        if (released) return false;
        stop();
        return (await this.scripts.leaseRelease(k, token)) === 1;
      },
      releaseAndRead: async () => {
        if (released) return null;
        stop();
        const reply = await this.scripts.leaseReleaseRead(k, token);
        if (reply[0] !== 1) return null;
        return {
          data: reply[1] ?? null,
          version: reply[2] ?? null,
          messages: reply[3],
          history: {
            hist: reply[4] ?? null,
            tenantId: reply[5] ?? null,
            threadId: reply[6] ?? null,
          },
        };
      },
      releaseIfIdle: async () => {
        if (released) return true;
        const result = await this.scripts.leaseReleaseIfIdle(k, token, ttl);
        if (result === -1) {
          stop();
          markLost('lease taken over before release');
          throw new LeaseLostError(runId, 'lease taken over before release');
        }
        if (result === 0) {
          validUntil = Date.now() + ttl;
          return false;
        }
        stop();
        return true;
      },
    };
    return lease;
  }
}
