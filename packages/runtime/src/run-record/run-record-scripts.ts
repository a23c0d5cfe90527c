import { runDataKeys, type RunKeys } from '../redis/keys.ts';
import {
  defineScript,
  defineVariadicScript,
  type LuaScript,
  type RedisClient,
} from '../redis/scripts.ts';
import {
  ACQUIRE_LOAD_LUA,
  ACQUIRE_LUA,
  RELEASE_IF_IDLE_LUA,
  RELEASE_LUA,
  RELEASE_READ_LUA,
  RENEW_LUA,
} from './lua/lease-scripts.ts';
import { LOOKUP_LUA, READ_NOTED_LUA, RECORD_LUA } from './lua/mailbox-scripts.ts';
import type { HolderNote } from '../internals/bullmq/job-hash.ts';
import { APPEND_LUA, COMMIT_LUA, CREATE_LUA, DELETE_LUA } from './lua/run-scripts.ts';

/** Reply codes of the run write scripts (guard_write, write_messages). */
export const WRITTEN = 1;
export const VERSION_MOVED = 0;
export const NO_RUN = -1;
export const FENCED = -2;
export const FINISHED = -3;
export const MESSAGES_OUT_OF_STEP = -4;
/** CREATE_LUA only: the create was sent again after Redis ran it. */
export const CREATE_RESENT = 2;

/** {code, version, eventJson…} (create, append). */
export type WriteReply = [number, number, ...string[]];
/** The commit's reply: a third header element says whether it released the lease. */
export type CommitReply = [number, number, number, ...unknown[]];

export interface CreateArgs {
  readonly data: string;
  readonly status: string;
  readonly tenant: string;
  readonly agent: string;
  readonly threadId: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly env: string;
  readonly at: string;
  readonly retention: number;
  readonly activity: string;
  readonly messagesToken: string;
  /** The thread-history reference (history-reference.ts); '' = the list holds every message. */
  readonly hist: string;
  /** The agent version the run is created on ('' = none: written as the meta's `aver`). */
  readonly agentVersion: string;
  readonly messages: readonly string[];
  readonly bodies: readonly string[];
}

export interface CommitArgs {
  readonly expectedVersion: number;
  readonly fence: string;
  readonly data: string;
  readonly status: string;
  readonly activity: string;
  readonly updatedAt: number;
  readonly trigger: string;
  readonly awaiting: string;
  readonly at: string;
  readonly retention: number;
  readonly release: string;
  readonly messagesToken: string;
  readonly messagesMode: 'append' | 'replace';
  readonly base: number;
  readonly parentRecord: string;
  /** The messages after `base` ('append') or all of them ('replace'), as JSON. */
  readonly messages: readonly string[];
  readonly bodies: readonly string[];
  /** The run's webhook configuration key: sent by a commit that finishes the run only. */
  readonly webhookConfig: string;
}

export interface AppendArgs {
  readonly fence: string;
  readonly at: string;
  readonly marker: string;
  readonly stepPrefix: string;
  readonly resetBody: string;
  readonly index: number;
  readonly bodies: readonly string[];
}

export interface AcquireLoadArgs {
  readonly token: string;
  readonly ttlMs: number;
  readonly markTtlMs: number;
  readonly driver: string;
  readonly recordField: string;
  readonly recordJson: string;
  readonly recordTtlSeconds: number;
  readonly deferIfComplete: '0' | '1';
  readonly knownName: string;
  readonly knownCount: number;
  /** Written in the same round trip (a single Redis only: the job's hash is in another slot). */
  readonly note?: HolderNote | undefined;
}

export type AcquireLoadReply =
  | [
      1,
      string | null,
      string | null,
      string[],
      string | null,
      string | null,
      (string | null)[] | null,
      string | null,
      number,
      string | null,
      string | null,
      string | null,
    ]
  | [0 | 2, string | null];

/** LRANGE of the run's list and the fields that locate its referenced history. */
export type ReleaseReadReply =
  | [-1]
  | [0]
  | [1, string | null, string | null, string[], string | null, string | null, string | null];

type Argv = (string | number)[];

/**
 * The only caller of the scripts that touch a run's keys (lua/*.ts): it registers each under a
 * name derived from its source and turns typed arguments into the KEYS and ARGV its header
 * states. Every run store, lease and mailbox goes through here, so a script's shape is known in
 * exactly two places: its header and the method below.
 */
export class RunRecordScripts {
  private readonly createScript: LuaScript<readonly string[], Argv, WriteReply>;
  private readonly commitScript: LuaScript<readonly string[], Argv, CommitReply>;
  private readonly appendScript: LuaScript<readonly string[], Argv, WriteReply>;
  private readonly deleteScript: LuaScript<readonly string[], [tenant: string], -1 | 0 | 1>;
  private readonly acquireScript: LuaScript<readonly string[], Argv, 0 | 1>;
  private readonly acquireLoadScript: LuaScript<readonly string[], Argv, AcquireLoadReply>;
  private readonly releaseScript: LuaScript<readonly string[], [token: string], -1 | 0 | 1>;
  private readonly releaseReadScript: LuaScript<
    readonly string[],
    [token: string],
    ReleaseReadReply
  >;
  private readonly releaseIfIdleScript: LuaScript<readonly string[], Argv, -1 | 0 | 1>;
  private readonly renewScript: LuaScript<readonly string[], Argv, 0 | 1>;
  private readonly recordScript: LuaScript<readonly string[], Argv, string | null>;
  private readonly readNotedScript: LuaScript<
    readonly string[],
    [holder: string, stalledCounter: number],
    [string | null, string | null]
  >;
  private readonly lookupScript: LuaScript<
    readonly string[],
    [field: string] | [field: string, holder: string, stalledCounter: number],
    [string] | [null, string | null, string | null]
  >;

  constructor(redis: RedisClient) {
    const fixed = <A extends readonly (string | number)[], R>(
      base: string,
      keys: number,
      lua: string,
    ): LuaScript<readonly string[], A, R> =>
      defineScript<readonly string[], A, R>(redis, base, keys, lua);
    this.createScript = fixed('batonRunCreate', 8, CREATE_LUA);
    this.commitScript = defineVariadicScript(redis, 'batonRunCommit', COMMIT_LUA);
    this.appendScript = fixed('batonRunAppend', 3, APPEND_LUA);
    this.deleteScript = fixed('batonRunDelete', 8, DELETE_LUA);
    this.acquireScript = fixed('batonLeaseAcquire', 3, ACQUIRE_LUA);
    this.acquireLoadScript = defineVariadicScript(redis, 'batonLeaseAcquireLoad', ACQUIRE_LOAD_LUA);
    this.releaseScript = fixed('batonLeaseRelease', 2, RELEASE_LUA);
    this.releaseReadScript = fixed('batonLeaseReleaseRead', 4, RELEASE_READ_LUA);
    this.releaseIfIdleScript = fixed('batonLeaseReleaseIfIdle', 2, RELEASE_IF_IDLE_LUA);
    this.renewScript = fixed('batonLeaseRenew', 1, RENEW_LUA);
    this.recordScript = fixed('batonRecordToolResult', 2, RECORD_LUA);
    this.lookupScript = defineVariadicScript(redis, 'batonToolLookup', LOOKUP_LUA);
    this.readNotedScript = fixed('batonToolReadNoted', 2, READ_NOTED_LUA);
  }

  create(k: RunKeys, a: CreateArgs): Promise<WriteReply> {
    return this.createScript(runDataKeys(k), [
      k.channel,
      a.data,
      a.status,
      a.tenant,
      a.agent,
      a.threadId,
      a.createdAt,
      a.updatedAt,
      a.env,
      a.at,
      a.retention,
      a.activity,
      a.messagesToken,
      a.hist,
      a.agentVersion,
      a.messages.length,
      ...a.messages,
      ...a.bodies,
    ]);
  }

  /**
   * The keys follow COMMIT_LUA's header: a commit that finishes the run sends all of them (and
   * the webhook configuration's), one that records a parent sends the parent key, others neither.
   */
  commit(k: RunKeys, a: CommitArgs): Promise<CommitReply> {
    const keys = [k.cp, k.events, k.lease, k.pending, k.messages];
    if (a.status === 'done') keys.push(k.results, k.parent, k.failed, a.webhookConfig);
    else if (a.parentRecord !== '') keys.push(k.parent);
    return this.commitScript(keys, [
      a.expectedVersion,
      a.fence,
      a.data,
      a.status,
      a.activity,
      a.updatedAt,
      a.trigger,
      a.awaiting,
      a.at,
      a.retention,
      a.release,
      a.messagesToken,
      a.messagesMode,
      a.base,
      a.parentRecord,
      a.messages.length,
      ...a.messages,
      ...a.bodies,
    ]);
  }

  append(k: RunKeys, a: AppendArgs): Promise<WriteReply> {
    return this.appendScript(
      [k.cp, k.events, k.lease],
      [k.channel, a.fence, a.at, a.marker, a.stepPrefix, a.resetBody, a.index, ...a.bodies],
    );
  }

  delete(k: RunKeys, tenant: string): Promise<-1 | 0 | 1> {
    return this.deleteScript(runDataKeys(k), [tenant]);
  }

  leaseAcquire(
    k: RunKeys,
    a: { token: string; ttlMs: number; markTtlMs: number; driver: string },
  ): Promise<0 | 1> {
    return this.acquireScript(
      [k.lease, k.pending, k.cp],
      [a.token, a.ttlMs, a.markTtlMs, a.driver],
    );
  }

  leaseAcquireLoad(k: RunKeys, a: AcquireLoadArgs): Promise<AcquireLoadReply> {
    const { note } = a;
    const keys = [k.lease, k.pending, k.cp, k.messages, k.results];
    if (note) keys.push(note.key);
    return this.acquireLoadScript(keys, [
      a.token,
      a.ttlMs,
      a.markTtlMs,
      a.driver,
      a.recordField,
      a.recordJson,
      a.recordTtlSeconds,
      a.deferIfComplete,
      a.knownName,
      a.knownCount,
      ...(note ? [note.holder, note.stalledCounter] : []),
    ]);
  }

  leaseRelease(k: RunKeys, token: string): Promise<-1 | 0 | 1> {
    return this.releaseScript([k.lease, k.pending], [token]);
  }

  leaseReleaseRead(k: RunKeys, token: string): Promise<ReleaseReadReply> {
    return this.releaseReadScript([k.lease, k.pending, k.cp, k.messages], [token]);
  }

  leaseReleaseIfIdle(k: RunKeys, token: string, ttlMs: number): Promise<-1 | 0 | 1> {
    return this.releaseIfIdleScript([k.lease, k.pending], [token, ttlMs]);
  }

  leaseRenew(k: RunKeys, token: string, ttlMs: number): Promise<0 | 1> {
    return this.renewScript([k.lease], [token, ttlMs]);
  }

  /** Null when this result was recorded, else the result already on record. */
  recordResult(
    k: RunKeys,
    field: string,
    json: string,
    ttlSeconds: number,
  ): Promise<string | null> {
    return this.recordScript([k.results, k.cp], [field, json, ttlSeconds]);
  }

  /** A tool job's first read of the run (HMGET data, version) with its attempt's holder note. */
  readNoted(k: RunKeys, note: HolderNote): Promise<[string | null, string | null]> {
    return this.readNotedScript([k.cp, note.key], [note.holder, note.stalledCounter]);
  }

  lookupResult(
    k: RunKeys,
    field: string,
    note?: HolderNote,
  ): Promise<[string] | [null, string | null, string | null]> {
    if (!note) return this.lookupScript([k.results, k.cp], [field]);
    return this.lookupScript(
      [k.results, k.cp, note.key],
      [field, note.holder, note.stalledCounter],
    );
  }
}
