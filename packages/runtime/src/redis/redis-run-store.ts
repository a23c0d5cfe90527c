import { CHECKPOINT_VERSION, CheckpointSchema } from '@baton/protocol';
import type {
  Checkpoint,
  CheckpointTrigger,
  EventBody,
  Message,
  RunEvent,
  RunStatus,
} from '@baton/protocol';
import { RunDoneError, VersionConflictError, activityOf } from '@baton/core';
import type { CommitResult, RunStore, StoredCheckpoint } from '@baton/core';
import { BatonKeys, mailboxField, runDataKeys, type RunDataKeys, type RunKeys } from './keys.ts';
import { defineScript, defineVariadicScript, type LuaScript, type RedisClient } from './scripts.ts';
import { decodeEventPayload } from './event-payload.ts';
import { randomToken } from '../random-token.ts';
import { CorruptCheckpointError } from '../errors/corrupt-checkpoint-error.ts';
import { InvalidCursorError } from '../errors/invalid-cursor-error.ts';
import { LeaseLostError } from '../errors/lease-lost-error.ts';

export { CorruptCheckpointError, InvalidCursorError, LeaseLostError };

/**
 * Lua shared by every script that appends events. Expects, in scope:
 *   cp, stream, channel, env, at, bodies (a table of body tails), out (reply table), echo (append
 *   each event's JSON to `out`). Sets `lastSeq` (0 when there were no events).
 * Each body arrives as its JSON without the leading '{' and is glued to the envelope by string
 * concatenation: decoding and re-encoding with cjson would turn empty arrays into objects.
 * The events of one write are one stream entry (id 0-<last seq>) and one PUBLISH: a single event
 * as its JSON object, several as a JSON array. So a commit costs the same few commands whatever
 * its number of events, subscribers see exactly the durable order and nothing that was not
 * stored, and a reader resuming after seq k reads from the entry whose last seq is > k.
 */
const APPEND_EVENTS_LUA = `
local n = #bodies
local lastSeq = 0
if n > 0 then
  local last = redis.call('HINCRBY', cp, 'seq', n)
  lastSeq = last
  local parts = {}
  for i = 1, n do
    local json = '{"seq":' .. (last - n + i) .. ',' .. env .. ',"at":' .. at .. ',' .. bodies[i]
    parts[i] = json
    if echo then out[#out + 1] = json end
  end
  local payload = parts[1]
  if n > 1 then payload = '[' .. table.concat(parts, ',') .. ']' end
  redis.call('XADD', stream, '0-' .. last, 'e', payload)
  redis.call('PUBLISH', channel, payload)
end
`;

/**
 * Writes the run's messages list. Expects, in scope: msgs (key), mode ('append' | 'replace'),
 * nmsg, from (index of the first message in ARGV), base (the count an append expects stored).
 * Sets `first` to the index of the first event body after the messages. An append that finds
 * another count stored (a run written before messages had their own list) returns -4 and
 * writes nothing: the caller resends the whole list.
 */
const MESSAGES_LUA = `
if mode == 'append' and redis.call('LLEN', msgs) ~= base then return {-4, current} end
if mode == 'replace' then redis.call('DEL', msgs) end
local i = from
while i < from + nmsg do
  local last = math.min(i + 999, from + nmsg - 1)
  redis.call('RPUSH', msgs, unpack(ARGV, i, last))
  i = last + 1
end
first = from + nmsg
`;

/** Lua: `bodies` = ARGV[first..]. Expects `first` in scope. */
const BODIES_FROM_ARGV_LUA = `
local bodies = {}
for i = first, #ARGV do bodies[#bodies + 1] = ARGV[i] end
`;

/**
 * A finished run keeps every key for `retention` seconds. Expects, in scope: retention, status
 * (the status this script wrote), `gone` (indexes of KEYS this script knows do not exist: an
 * EXPIRE of them would be a command that does nothing), and the run's keys as the first KEYS (up
 * to 8 of them: cp, events, lease, pending, results, parent, failed, messages; a key after those
 * is not the run's data and keeps its own expiry).
 */
const RETENTION_LUA = `
if status == 'done' then
  for i = 1, math.min(#KEYS, 8) do
    if not gone[i] then redis.call('EXPIRE', KEYS[i], retention) end
  end
end
`;

/**
 * The guards every write to an existing run passes, in this order, so a caller learns the most
 * useful reason: the run is gone (-1), finished (-3: a done run takes no event at all), the
 * writer's lease is not the current one (-2: fencing; '' = an unfenced control-plane write such
 * as a decision), or the version moved (0). Expects, in scope: cp, lease, fence.
 * Sets `current` (the stored version) and `env` (the run's envelope ids, written once at create).
 */
const GUARDS_LUA = `
local guarded = redis.call('HMGET', cp, 'version', 'status', 'env')
local current = guarded[1]
if not current then return {-1, -1} end
current = tonumber(current)
if guarded[2] == 'done' then return {-3, current} end
if fence ~= '' and redis.call('GET', lease) ~= fence then return {-2, current} end
local env = guarded[3]
`;

/**
 * KEYS: cp, events, lease, pending, results, parent, failed, messages
 * ARGV: channel, data (without messages), status, tenant, agent, threadId, createdAt, updatedAt,
 *       env, at, retention, activity, messages token (names this list: see 'mepoch'), nmsg,
 *       messageJson × nmsg, bodies…
 * Reply: {1, 1, eventJson…} | {0, actualVersion}
 *      | {2, 1, payload|nil} this very create, sent again (see below): payload is its stream entry
 * A run whose list still has this create's name (the token is drawn per call) was made by this
 * call: ioredis re-sends a command whose reply a dropped connection lost, though Redis ran it,
 * and the caller must hear "created", not "exists" (it would release the new run's thread).
 */
const CREATE_LUA = `
local cp, stream, msgs = KEYS[1], KEYS[2], KEYS[8]
local existing = redis.call('HMGET', cp, 'version', 'mepoch')
local current = existing[1]
if current then
  if existing[2] == ARGV[13] then
    local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
    if first then return {2, 1, first[2][2]} end
    return {2, 1}
  end
  return {0, tonumber(current)}
end
-- a stream without a checkpoint is a leftover (cannot happen unless keys were deleted by hand)
redis.call('DEL', stream)
local channel, env, at, retention = ARGV[1], ARGV[9], ARGV[10], ARGV[11]
local mode, nmsg, from, base, first = 'replace', tonumber(ARGV[14]), 15, 0, 0
${MESSAGES_LUA}
local status = ARGV[3]
redis.call('HSET', cp, 'version', 1, 'seq', 0, 'data', ARGV[2], 'status', ARGV[3], 'tenant', ARGV[4],
  'agent', ARGV[5], 'threadId', ARGV[6], 'createdAt', ARGV[7], 'updatedAt', ARGV[8], 'env', env,
  'lastTrigger', '', 'activity', ARGV[12], 'awaiting', '[]', 'mepoch', ARGV[13])
local out, echo, gone = {1, 1}, true, {}
${BODIES_FROM_ARGV_LUA}
${APPEND_EVENTS_LUA}
${RETENTION_LUA}
return out
`;

/**
 * KEYS: cp, events, lease, pending, messages, then either parent (a commit that records the
 *       round's parent job) or, for a commit that finishes the run (status 'done'), results,
 *       parent, failed, webhook: only that commit touches them (retention, the failed jobs, whether
 *       the run has webhooks), so the others do not send their names.
 * ARGV: expectedVersion, fence ('' = unfenced), data (without messages), status, activity,
 *       updatedAt, trigger ('' = none), awaiting (JSON array of the mailbox fields of the running
 *       calls, read back by the lease acquire), at, retention, release ('' = keep the lease; else
 *       the lease TTL in ms: release it after the commit unless someone asked for the run
 *       meanwhile, in which case the mark is cleared and the lease renewed; a commit that
 *       finishes the run deletes the lease and the mark whoever holds them), messages token
 *       (the list's new name when it is replaced), messages mode ('append' the new ones after
 *       `base` stored | 'replace' all), base, parent record ('' = none: the step job about to
 *       wait for this round's tool jobs, written with the calls that make them), nmsg,
 *       messageJson × nmsg, bodies…
 * 'mepoch' names a run's message list: set at create and whenever the list is written anew, never
 * on an append, so a reader that kept the first n messages of a list with that name can read only
 * the rest (RunLeases.acquireAndLoad).
 * The run's pub/sub channel is its key base + ':ch' (BatonKeys.run), derived from the cp key.
 * Reply: {1, newVersion, released (1 released | 0 kept | -1 not asked), lastSeq,
 *         failedJobs, webhook (1 the run has a webhook configuration | 0; both only when the
 *         run is done now)}
 *      | {code, actualVersion} (codes: see GUARDS_LUA; -4 see MESSAGES_LUA)
 */
const COMMIT_LUA = `
local cp, stream, lease, fence, msgs = KEYS[1], KEYS[2], KEYS[3], ARGV[2], KEYS[5]
${GUARDS_LUA}
if current ~= tonumber(ARGV[1]) then return {0, current} end
local status = ARGV[4]
if status == 'done' and #KEYS < 9 then
  return redis.error_reply('commit: a commit that finishes the run takes all of its keys')
end
if ARGV[15] ~= '' and #KEYS ~= 6 and #KEYS ~= 9 then
  return redis.error_reply('commit: a parent record needs the parent key')
end
local version = current + 1
local channel = string.sub(cp, 1, -4) .. ':ch'
local at, retention = ARGV[9], ARGV[10]
local mode, base, nmsg, from, first = ARGV[13], tonumber(ARGV[14]), tonumber(ARGV[16]), 17, 0
${MESSAGES_LUA}
-- A list written anew gets a new name: what a reader kept of the old one is not a prefix of it.
if mode == 'replace' then redis.call('HSET', cp, 'mepoch', ARGV[12]) end
redis.call('HSET', cp, 'version', version, 'data', ARGV[3], 'status', status, 'activity', ARGV[5],
  'updatedAt', ARGV[6], 'lastTrigger', ARGV[7], 'awaiting', ARGV[8])
local released, gone = -1, {}
if status == 'done' then
  -- A finished run holds no lease and no mark, whoever held them (an unfenced write ends a run
  -- under a holder's feet): kept, the retention EXPIRE below would stretch them to a day, and
  -- any job of the run that met them would wait for them. Every later write to the run is
  -- refused anyway (GUARDS_LUA), and a finished run needs no other pass.
  redis.call('DEL', lease, KEYS[4])
  gone[3], gone[4] = true, true
  if ARGV[11] ~= '' and fence ~= '' then released = 1 end
elseif ARGV[11] ~= '' and fence ~= '' then
  gone[4] = true
  if redis.call('DEL', KEYS[4]) == 1 then
    redis.call('PEXPIRE', lease, ARGV[11])
    released = 0
  else
    redis.call('DEL', lease)
    released = 1
    gone[3] = true
  end
end
-- The events are not sent back: the caller has their bodies and rebuilds them from lastSeq.
local out, echo = {1, version, released}, false
${BODIES_FROM_ARGV_LUA}
${APPEND_EVENTS_LUA}
out[4] = lastSeq
-- A finished run's failed tool jobs are removed by its clean-up: it gets their ids from here.
if status == 'done' then
  out[5] = redis.call('SMEMBERS', KEYS[8])
  if #out[5] == 0 then gone[8] = true end
  out[6] = redis.call('EXISTS', KEYS[9])
end
-- One day, like the record a fan-out writes itself (fan-out.ts): a round never lasts longer.
if ARGV[15] ~= '' then redis.call('SET', KEYS[#KEYS == 6 and 6 or 7], ARGV[15], 'PX', 86400000) end
${RETENTION_LUA}
return out
`;

/**
 * Events outside a commit (text deltas): fenced on the lease, never on the version, so a decision
 * committed meanwhile does not interrupt a stream, while a writer that lost its lease is refused
 * and nothing lands after run.finished. The envelope ids come from the stored checkpoint.
 * `marker` ('<step>:<nonce>') names the inference attempt; the first append of a new attempt of
 * a step that already streamed deltas emits `resetBody` first (clients drop the old deltas).
 * `index` is the append's place among its attempt's appends (0, 1, …): the hash keeps how many
 * of the current attempt's appends it holds ('streamed'), and an append it already holds is a
 * command sent again (ioredis re-sends what was unanswered when a connection dropped, though
 * Redis may have run it): it writes nothing and answers as written. An index past 'streamed'
 * (earlier appends lost with a Redis crash) is written: deltas are lost, never doubled.
 * KEYS: cp, events, lease
 * ARGV: channel, fence, at, marker, stepPrefix, resetBody ('' = none), index, bodies…
 * Reply: {1, version, eventJson…} | {code, actualVersion} (codes: see GUARDS_LUA)
 */
const APPEND_LUA = `
local cp, stream, lease, fence = KEYS[1], KEYS[2], KEYS[3], ARGV[2]
if fence == '' then return redis.error_reply('append needs a fencing token') end
${GUARDS_LUA}
local channel, at, marker, stepPrefix, resetBody = ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local index = tonumber(ARGV[7])
local out, echo = {1, current}, true
local bodies = {}
local previous = redis.call('HMGET', cp, 'stream', 'streamed')
if previous[1] == marker then
  if index < tonumber(previous[2] or '0') then return out end
else
  redis.call('HSET', cp, 'stream', marker)
  if previous[1] and resetBody ~= '' and string.sub(previous[1], 1, #stepPrefix) == stepPrefix then
    bodies[1] = resetBody
  end
end
redis.call('HSET', cp, 'streamed', index + 1)
for i = 8, #ARGV do bodies[#bodies + 1] = ARGV[i] end
${APPEND_EVENTS_LUA}
return out
`;

/**
 * Deletes a finished run's keys (DELETE /v1/runs/:id). A run that is not done is refused: its
 * workers would recreate what was deleted.
 * KEYS: cp, events, lease, pending, results, parent, failed, messages
 * ARGV: tenant
 * Reply: 1 deleted | 0 no such run (or another tenant's) | -1 not done
 */
const DELETE_LUA = `
local tenant = redis.call('HGET', KEYS[1], 'tenant')
if not tenant or tenant ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'status') ~= 'done' then return -1 end
redis.call('DEL', unpack(KEYS))
return 1
`;

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

export interface RunSummary {
  readonly runId: string;
  readonly tenantId: string;
  readonly agent: string;
  readonly threadId: string;
  readonly status: RunStatus;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ListRunsQuery {
  readonly tenantId: string;
  readonly status?: RunStatus;
  readonly agent?: string;
  readonly threadId?: string;
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

/** Reply codes of the write scripts (GUARDS_LUA). */
const WRITTEN = 1;
const VERSION_MOVED = 0;
const NO_RUN = -1;
const FENCED = -2;
const FINISHED = -3;
const MESSAGES_OUT_OF_STEP = -4;
/** CREATE_LUA only: the create was sent again after Redis ran it. */
const CREATE_RESENT = 2;

type ScriptReply = [number, number, ...string[]];
/** The commit's reply: a third header element says whether it released the lease. */
type CommitReply = [number, number, number, ...unknown[]];

type RunCreate = LuaScript<
  RunDataKeys,
  [
    channel: string,
    data: string,
    status: string,
    tenant: string,
    agent: string,
    threadId: string,
    createdAt: number,
    updatedAt: number,
    env: string,
    at: string,
    retention: number,
    activity: string,
    messagesToken: string,
    ...messagesAndBodies: (string | number)[],
  ],
  ScriptReply
>;
type RunCommit = LuaScript<
  readonly string[],
  [
    expectedVersion: number,
    fence: string,
    data: string,
    status: string,
    activity: string,
    updatedAt: number,
    trigger: string,
    awaiting: string,
    at: string,
    retention: number,
    release: string,
    messagesToken: string,
    messagesMode: 'append' | 'replace',
    base: number,
    parentRecord: string,
    ...messagesAndBodies: (string | number)[],
  ],
  CommitReply
>;
type RunAppend = LuaScript<
  [cp: string, events: string, lease: string],
  [
    channel: string,
    fence: string,
    at: string,
    marker: string,
    stepPrefix: string,
    resetBody: string,
    index: number,
    ...bodies: string[],
  ],
  ScriptReply
>;
type RunDelete = LuaScript<RunDataKeys, [tenant: string], -1 | 0 | 1>;

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
export interface RunMeta {
  readonly status: RunStatus;
  readonly activity: 'active' | 'waiting' | 'done';
  readonly version: number;
  readonly tenantId: string;
  readonly threadId: string;
  /** The run's agent (whose queues its jobs go to). */
  readonly agent: string;
  readonly updatedAt: number;
  /** The job that last held the run's lease ('<queue>:<jobId>'; '' = none yet). */
  readonly driver: string;
}

const MAX_LIMIT = 1000;

/**
 * RunStore + EventAppender on Redis. Same contract as MemoryRunStore: compare-and-set on the
 * version, events sequenced gaplessly from 1 per run and stored atomically with the commit,
 * envelope {seq, runId, threadId, turnId, at} followed by the body's fields.
 */
export class RedisRunStore implements RunStore {
  readonly keys: BatonKeys;
  private readonly redis: RedisClient;
  private readonly now: () => number;
  private readonly retentionSeconds: number;
  private readonly validateOnLoad: boolean;
  private readonly createScript: RunCreate;
  private readonly commitScript: RunCommit;
  private readonly appendScript: RunAppend;
  private readonly deleteScript: RunDelete;

  constructor(opts: RedisRunStoreOptions) {
    this.redis = opts.redis;
    this.keys = new BatonKeys(opts.prefix);
    this.now = opts.now;
    this.retentionSeconds = opts.retentionSeconds ?? 86_400;
    if (!Number.isInteger(this.retentionSeconds) || this.retentionSeconds <= 0)
      throw new Error('RedisRunStore: retentionSeconds must be a positive integer');
    this.validateOnLoad = opts.validateOnLoad ?? false;
    this.createScript = defineScript(this.redis, 'batonRunCreate4', 8, CREATE_LUA);
    this.commitScript = defineVariadicScript(this.redis, 'batonRunCommit7', COMMIT_LUA);
    this.appendScript = defineScript(this.redis, 'batonRunAppend4', 3, APPEND_LUA);
    this.deleteScript = defineScript(this.redis, 'batonRunDelete2', 8, DELETE_LUA);
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
    opts: { readonly threadIndexed?: boolean } = {},
  ): Promise<CommitResult> {
    const id = checkpoint.identity;
    const k = this.keys.run(id.runId);
    const reply = await this.createScript(runDataKeys(k), [
      k.channel,
      checkpointData(checkpoint),
      checkpoint.status,
      id.tenantId,
      id.agent,
      id.threadId,
      checkpoint.createdAt,
      checkpoint.updatedAt,
      envelopeIds(checkpoint),
      this.atArg(),
      this.retentionSeconds,
      activityOf(checkpoint),
      randomToken(),
      checkpoint.messages.length,
      ...checkpoint.messages.map((m) => JSON.stringify(m)),
      ...events.map(bodyTail),
    ]);
    if (reply[0] !== WRITTEN && reply[0] !== CREATE_RESENT)
      throw new VersionConflictError(id.runId, 0, reply[1]);
    // Indexes live in other slots (tenant, thread), so they are written after the run exists.
    // ZADD is idempotent; a crash in between leaves an unlisted (but fully working) run.
    await Promise.all([
      this.redis.zadd(this.keys.tenantRuns(id.tenantId), checkpoint.createdAt, id.runId),
      opts.threadIndexed === true
        ? undefined
        : this.redis.zadd(
            this.keys.thread(id.tenantId, id.threadId).runs,
            checkpoint.createdAt,
            id.runId,
          ),
    ]);
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

  async load(runId: string): Promise<StoredCheckpoint | null> {
    const { data, version, messages } = await this.readStored(runId);
    return this.decode(runId, data, version, messages, this.validateOnLoad);
  }

  /** load() with a full CheckpointSchema parse (debug / admin paths). */
  async loadValidated(runId: string): Promise<StoredCheckpoint | null> {
    const { data, version, messages } = await this.readStored(runId);
    return this.decode(runId, data, version, messages, true);
  }

  /**
   * The checkpoint's fields, its whole messages list and the list's name ('mepoch'), in one
   * round trip (one hash slot): decode with decodeStored.
   */
  async readStored(runId: string): Promise<{
    data: string | null;
    version: string | null;
    messages: string[];
    messagesName: string | null;
  }> {
    const k = this.keys.run(runId);
    const replies = await this.redis
      .pipeline()
      .hmget(k.cp, 'data', 'version', 'mepoch')
      .lrange(k.messages, 0, -1)
      .exec();
    if (!replies) throw new Error(`run ${runId}: load was not executed`);
    for (const [error] of replies) if (error) throw error;
    const [data, version, name] = (replies[0]?.[1] ?? []) as (string | null)[];
    return {
      data: data ?? null,
      version: version ?? null,
      messages: (replies[1]?.[1] ?? []) as string[],
      messagesName: name ?? null,
    };
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
    fence = '',
    releaseTtlMs?: number,
    base?: Checkpoint,
    /** The step job about to wait for this round's tool jobs (fan-out.ts reads it back). */
    parentRecord?: string,
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
    const k = this.keys.run(runId);
    // Messages are append-only in practice (transitions copy the array and never edit a message
    // in place), so a commit whose base shares every earlier message writes only the new ones.
    const from = base ? sharedPrefix(base.messages, checkpoint.messages) : 0;
    const mode = base && from === base.messages.length ? 'append' : 'replace';
    const call = (m: 'append' | 'replace', after: number) =>
      this.commitScript(
        checkpoint.status === 'done'
          ? finalCommitKeys(k, this.keys.webhook(runId).config)
          : parentRecord
            ? [...commitKeys(k), k.parent]
            : commitKeys(k),
        [
          expectedVersion,
          fence,
          data,
          checkpoint.status,
          activityOf(checkpoint),
          checkpoint.updatedAt,
          trigger ?? '',
          awaitingFields(checkpoint),
          at,
          this.retentionSeconds,
          releaseTtlMs === undefined ? '' : String(releaseTtlMs),
          m === 'replace' ? randomToken() : '',
          m,
          after,
          parentRecord ?? '',
          checkpoint.messages.length - after,
          ...checkpoint.messages.slice(after).map((msg) => JSON.stringify(msg)),
          ...bodies,
        ],
      );
    const data = checkpointData(checkpoint);
    const bodies = events.map(bodyTail);
    const at = this.atArg();
    let reply = await call(mode, mode === 'append' ? from : 0);
    // The stored list was not what the base says (a run written before messages had their own
    // list): write the whole list instead.
    if (reply[0] === MESSAGES_OUT_OF_STEP) reply = await call('replace', 0);
    refused(runId, expectedVersion, reply);
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
    const reply = await this.appendScript(
      [k.cp, k.events, k.lease],
      [
        k.channel,
        fence,
        this.atArg(),
        `${attempt.step}:${attempt.nonce}`,
        `${attempt.step}:`,
        bodyTail(attempt.reset),
        attempt.index,
        ...events.map(bodyTail),
      ],
    );
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
    const reply = await this.deleteScript(runDataKeys(k), [tenantId]);
    if (reply === 0) return 'not_found';
    if (reply === -1) return 'active';
    await this.dropFromIndexes(tenantId, threadId ?? '', runId);
    return 'deleted';
  }

  /** Removes a run from the tenant and thread indexes (its keys are gone or going). */
  async dropFromIndexes(tenantId: string, threadId: string, runId: string): Promise<void> {
    const thread = this.keys.thread(tenantId, threadId);
    await Promise.all([
      this.redis.zrem(this.keys.tenantRuns(tenantId), runId),
      this.redis.zrem(thread.runs, runId),
      this.redis.hdel(thread.released, runId),
      this.redis.zrem(this.keys.activeRuns, runId),
      this.redis.zrem(this.keys.waitingRuns, runId),
    ]);
  }

  /** The run's summary fields, without its checkpoint (null when it does not exist). */
  async meta(runId: string): Promise<RunMeta | null> {
    const [status, activity, version, tenant, threadId, updatedAt, driver, agent] =
      await this.redis.hmget(
        this.keys.run(runId).cp,
        'status',
        'activity',
        'version',
        'tenant',
        'threadId',
        'updatedAt',
        'driver',
        'agent',
      );
    if (!status || !version || !tenant) return null;
    return {
      status: status as RunStatus,
      activity: (activity ?? 'active') as RunMeta['activity'],
      version: Number(version),
      tenantId: tenant,
      threadId: threadId ?? '',
      agent: agent ?? '',
      updatedAt: Number(updatedAt),
      driver: driver ?? '',
    };
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
          ),
        ),
      );
      const expired: string[] = [];
      candidates.forEach((c, i) => {
        const [tenant, status, agent, threadId, updatedAt] = fields[i] ?? [];
        if (tenant === null || tenant === undefined) {
          expired.push(c.runId);
          return;
        }
        if (tenant !== query.tenantId) return;
        if (query.status !== undefined && status !== query.status) return;
        if (query.agent !== undefined && agent !== query.agent) return;
        if (query.threadId !== undefined && threadId !== query.threadId) return;
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
      if (expired.length > 0) await this.redis.zrem(indexKey, ...expired);
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
    const at = this.now();
    if (!Number.isFinite(at)) throw new Error('RedisRunStore: now() must return a finite number');
    return JSON.stringify(at);
  }

  /** A checkpoint read by another script (e.g. the lease's acquire-and-load). */
  decodeStored(
    runId: string,
    data: string | null,
    version: string | null,
    messages: readonly string[] | { readonly parsed: readonly Message[] },
  ): StoredCheckpoint | null {
    return this.decode(runId, data, version, messages, this.validateOnLoad);
  }

  private decode(
    runId: string,
    data: string | null,
    version: string | null,
    messages: readonly string[] | { readonly parsed: readonly Message[] },
    validate: boolean,
  ): StoredCheckpoint | null {
    if (data === null || version === null) return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
      // Runs stored before messages had their own list carry them inside the checkpoint.
      if (typeof parsed === 'object' && parsed !== null && !('messages' in parsed))
        (parsed as { messages: unknown[] }).messages =
          'parsed' in messages
            ? [...messages.parsed]
            : messages.map((m) => JSON.parse(m) as unknown);
    } catch {
      throw new CorruptCheckpointError(runId, 'not JSON');
    }
    let checkpoint: Checkpoint;
    if (validate) {
      const result = CheckpointSchema.safeParse(parsed);
      if (!result.success) throw new CorruptCheckpointError(runId, result.error.message);
      checkpoint = result.data;
    } else {
      checkpoint = cheapCheck(runId, parsed);
    }
    if (checkpoint.identity.runId !== runId)
      throw new CorruptCheckpointError(runId, `identity.runId is ${checkpoint.identity.runId}`);
    return { checkpoint, version: Number(version) };
  }
}

/** Shape check without zod: enough to catch a wrong key or a foreign format version. */
function cheapCheck(runId: string, value: unknown): Checkpoint {
  if (typeof value !== 'object' || value === null)
    throw new CorruptCheckpointError(runId, 'not an object');
  const cp = value as Partial<Checkpoint>;
  if (cp.v !== CHECKPOINT_VERSION)
    throw new CorruptCheckpointError(runId, `checkpoint version ${String(cp.v)}`);
  if (typeof cp.identity !== 'object' || cp.identity === null)
    throw new CorruptCheckpointError(runId, 'no identity');
  if (typeof cp.status !== 'string' || typeof cp.phase !== 'string')
    throw new CorruptCheckpointError(runId, 'no status/phase');
  if (!Array.isArray(cp.messages) || typeof cp.calls !== 'object' || cp.calls === null)
    throw new CorruptCheckpointError(runId, 'no messages/calls');
  return value as Checkpoint;
}

/** The checkpoint as stored in its hash: everything but the messages (they have their own list). */
function checkpointData(cp: Checkpoint): string {
  return JSON.stringify({ ...cp, messages: undefined });
}

/** How many leading messages `next` shares (by identity) with `base`. */
function sharedPrefix(base: readonly unknown[], next: readonly unknown[]): number {
  const n = Math.min(base.length, next.length);
  let i = 0;
  while (i < n && base[i] === next[i]) i += 1;
  return i;
}

/** The keys every commit takes (see COMMIT_LUA). */
function commitKeys(k: RunKeys): [string, string, string, string, string] {
  return [k.cp, k.events, k.lease, k.pending, k.messages];
}

/**
 * The keys of a commit that finishes the run: all of them (retention, failed jobs) and its webhook
 * configuration (whether the run has one).
 */
function finalCommitKeys(k: RunKeys, webhook: string): string[] {
  return [...commitKeys(k), k.results, k.parent, k.failed, webhook];
}

/**
 * The mailbox fields of the calls that wait for a result, in call order, as a JSON array: the
 * lease acquire reads their results with the checkpoint (see RunLeases.acquireAndLoad).
 */
function awaitingFields(cp: Checkpoint): string {
  const fields: string[] = [];
  for (const id of cp.round) {
    const call = cp.calls[id];
    if (call?.status === 'running') fields.push(mailboxField(call.id, call.attempt));
  }
  return JSON.stringify(fields);
}

/** `"runId":…,"threadId":…,"turnId":…` — the envelope ids as JSON members without braces. */
function envelopeIds(cp: Checkpoint): string {
  const { runId, threadId, turnId } = cp.identity;
  return JSON.stringify({ runId, threadId, turnId }).slice(1, -1);
}

/** The body's JSON without its leading '{' (the script prepends the envelope). */
function bodyTail(body: EventBody): string {
  const json = JSON.stringify(body);
  if (json === undefined || !json.startsWith('{') || json.length < 3)
    throw new Error('event body must be a non-empty object');
  return json.slice(1);
}

/** Throws the typed error for a refused write (see GUARDS_LUA); returns for a written one. */
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

/**
 * The events a commit appended, as the script built them (same envelope, same `at`, seqs ending
 * at `lastSeq`). The worker's commits never read them: building them here instead of sending them
 * back from Redis saves bytes and decoding on every commit (callers that read them do so once).
 */
function rebuiltEvents(
  env: string,
  at: string,
  bodies: readonly string[],
  lastSeq: number,
): RunEvent[] {
  return bodies.map(
    (body, i) =>
      JSON.parse(
        `{"seq":${String(lastSeq - bodies.length + 1 + i)},${env},"at":${at},${body}`,
      ) as RunEvent,
  );
}

function parseEvents(reply: readonly unknown[], from = 2): RunEvent[] {
  const out: RunEvent[] = [];
  for (let i = from; i < reply.length; i += 1) out.push(JSON.parse(reply[i] as string) as RunEvent);
  return out;
}

function streamField(fields: string[]): string {
  for (let i = 0; i + 1 < fields.length; i += 2)
    if (fields[i] === 'e') return fields[i + 1] as string;
  throw new Error('stream entry without field e');
}

function encodeCursor(createdAt: number, runId: string): string {
  return Buffer.from(JSON.stringify([createdAt, runId]), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; runId: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'number' &&
      Number.isFinite(value[0]) &&
      typeof value[1] === 'string'
    )
      return { createdAt: value[0], runId: value[1] };
  } catch {
    // fall through
  }
  throw new InvalidCursorError();
}
