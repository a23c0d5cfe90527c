/**
 * Every Redis key and channel Baton uses, in one place.
 *
 * Layout (p = prefix, default 'baton'; {…} is a Redis Cluster hash tag, so every key of one run,
 * of one thread, or of one tenant index lives in one slot and one Lua script may touch them all):
 *
 *   Run (slot of `{run:<runId>}`): p:{run:<runId>}:cp (HASH), :messages, :events, :ch, :lease,
 *     :pending, :results, :parent, :failed, :webhook, :webhook-log, and the run indexes
 *     (p:runs:active|waiting|gc, tenant and thread :runs) and the control channel (p:control):
 *     every key and `cp` field, who writes it and who reads it, is in
 *     packages/runtime/src/run-record/README.md (the module that owns a run's record).
 *
 *   Thread (slot of `{thread:<tenant>:<threadId>}`)
 *     p:{thread:<t>:<th>}:meta      HASH   activeRunId
 *     p:{thread:<t>:<th>}:messages  LIST   history, one message JSON per element, oldest first
 *     p:{thread:<t>:<th>}:state     STRING persistent thread-scope state (JSON object)
 *     p:{thread:<t>:<th>}:queue     LIST   pending run ids (multitask 'enqueue' at the tail,
 *                                          'interrupt' at the head); head is promoted on release
 *     p:{thread:<t>:<th>}:runs      ZSET   run ids of the thread, score = createdAt (ms)
 *     p:{thread:<t>:<th>}:released  HASH   runId -> run id it promoted on release ('' = none);
 *                                          makes release idempotent per run
 *
 *   Tenant index (slot of `{tenant:<tenant>}`)
 *     p:{tenant:<t>}:runs           ZSET   run ids of the tenant, score = createdAt (ms)
 *   Run indexes (see run-record/README.md): p:runs:active, p:runs:waiting, p:runs:gc
 *   These, p:agents and the reconciler's keys are single keys (one master on a cluster): each is
 *   under 0.4 % of all commands at the bench's rate (bench/README.md, "Keys a cluster cannot
 *   spread"), so they are not sharded.
 *   Control: p:control                PUB/SUB cancel broadcasts to every worker: plain PUBLISH /
 *                                      SUBSCRIBE on purpose (on a Redis Cluster a broadcast crosses
 *                                      the cluster bus to every node; cancels are rare and must reach
 *                                      every worker wherever it is connected)
 *   A run's channel p:{run:<id>}:ch is sharded pub/sub (SPUBLISH by the commit scripts, SSUBSCRIBE
 *   by RunEventSubscriber): it stays on the node that owns the run's slot. Nothing subscribes to
 *   every run's channel; event metrics are counted where events are committed (p:metrics:events).
 *
 *   Agents
 *     p:agents                      HASH   agent name -> advert JSON (what workers can run; data only)
 *     p:workers:live                ZSET   worker id -> heartbeat expiry (ms, Redis clock): one
 *                                          ZADD per heartbeat, however many agents a worker runs
 *     p:agents:live:<agent>         ZSET   worker id -> membership expiry (ms), refreshed every few
 *                                          heartbeats; PEXPIRE past it, so the set of an agent
 *                                          nobody runs goes too
 *     p:workers:capacity            HASH   worker id -> "<step slots>\t<membership expiry ms>": what
 *                                          admission may lend a lone fairness key (borrowing);
 *                                          entries gone a minute are trimmed by the refreshes
 *     p:queues                      SET    every BullMQ queue producers used (queue-shards.ts)
 *     p:task-queue:<tq>:pool        STRING signature of the agent set that holds task queue <tq>
 *                                          (task-queue-pools.ts), with a TTL refreshed by its adverts
 *   Agent versions (agent-versions.ts)
 *     p:agent-versions              HASH   `<agent>\n<version>` -> version advert JSON (task queue,
 *                                          versioning, firstSeen); one HSET per heartbeat
 *     p:agent-versions:current      HASH   agent -> { version, history } an operator promoted
 *     p:agents:live-version:<v>:<a> ZSET   worker id -> membership expiry (ms), as p:agents:live
 *     p:agent-versions:parked       SET    `<agent>\n<version>` with runs parked for want of a worker
 *     p:agent-versions:parked:<v>:<a>  HASH  runId -> the step to enqueue when a worker of it starts
 *     p:agent-versions:runs:<v>:<a>:active|waiting  SET  unfinished runs created on the version
 *
 *   Timers (timers/timer-index.ts; swept by every worker)
 *     p:{timers:<K>:<i>}            ZSET   JSON [kind, tenant, run, call] -> due (ms); a claimed
 *                                          entry's score is its claim's expiry until acked
 *     p:timers:layouts              SET    the shard counts K timers were written under
 *     p:timers:changed              STRING counter INCRed after every schedule: an idle sweeper
 *                                          polls it (one GET) instead of sweeping every shard
 *
 *   Reconciler (workers)
 *     p:reconciler:lock             STRING one scanner at a time across workers (SET NX PX)
 *     p:reconciler:waiting-cursor   STRING where the scan of waiting runs resumes
 *     p:reconciler:failed-cursor    HASH   queue -> finishedOn up to which its failed jobs were swept
 *
 *   Schedules (slot of `{sched:<tenant>}`: a tenant's schedules and their index change atomically)
 *     p:{sched:<t>}:index           ZSET   schedule ids of the tenant, score = createdAt (ms)
 *     p:{sched:<t>}:s:<id>          HASH   version (CAS), data (record JSON), state, fired (count)
 *     p:{sched:<t>}:s:<id>:firings  ZSET   scheduledFor (ms) of the latest firings (trimmed)
 *     p:{sched:<t>}:s:<id>:firing   HASH   scheduledFor -> firing JSON (written once per firing)
 *     p:{sched:<t>}:s:<id>:runs     ZSET   run ids the schedule created, score = scheduledFor (trimmed)
 *     p:schedules:all               ZSET   JSON [tenant, id] of every schedule (repair sweeps)
 *     p:schedules:repair-lock / p:schedules:repair-cursor   one repair sweep at a time, and where it resumes
 *   Webhooks (see run-record/webhook-store.ts; the run's hash tag, so one script may touch them all)
 *     p:{run:<runId>}:webhook      HASH   endpoints (JSON, with their secrets), tenant, metadata,
 *                                         createdAt, cursor (last event seq the outbox examined)
 *     p:{run:<runId>}:webhook-log  LIST   delivery log records (JSON), capped; expires with :webhook
 *     p:webhooks:runs               ZSET   runs whose webhooks the sweeper checks, score = when next
 *     p:webhooks:sweep-lock         STRING one sweeper at a time across workers (SET NX PX)
 *   Fairness (admission: fairness/run-admission.ts; the user-facing layout is docs/fairness.md)
 *     p:{fair:<t>}:where|busy|keys|dispatched|borrow, :q:<key>   a tenant's admission state (one
 *                                          slot)
 *     p:fair:tenants                SET    tenants with admission state (the sweep and /metrics)
 *     p:fair:sweep-cursor           HASH   tenant -> HSCAN cursor of its :where, where the
 *                                          reconciler's leak sweep resumes ('0' = from the start)
 *   Archive (ARCHIVE_URL; see archive/archiver.ts)
 *     p:archive:pending             ZSET   finished runs not archived yet, score = finishedAt (ms)
 *     p:archive:lock                STRING one archiver at a time across workers (SET NX PX)
 *
 *   Waits (waits/: waitpoints, event waits and their timeouts)
 *     p:wp:<sha256(token)>          HASH   rec (JSON: tenant, run, call, responseSchema, expiresAt),
 *                                          outcome (the first completion); PEXPIREAT expiresAt
 *     p:waits:early:<runId>         HASH   callId -> completion that came before its call suspended
 *     p:waits:wps:<runId>           HASH   callId -> expiresAt of the API-made waitpoints (the view)
 *     p:{evw:<t>:<name>:<key>}      SET    JSON [runId, callId] of the calls waiting for that event;
 *                                          claimed (read and deleted) at once by POST /v1/events
 *     p:waits:timeouts              ZSET   LEGACY, read-only: event-wait timeouts the previous release
 *                                          wrote (JSON [runId, callId, kind], score = due); the
 *                                          reconciler drains them; remove one release later
 *
 *   API
 *     p:{idem:<t>}:<scope>:<key>    STRING Idempotency-Key record (first response or pending)
 *     p:{replay:<t>}:<id>           STRING bulk replay: selection, progress, replays (CAS on version, 7 days)
 *     p:{apikeys}:by-hash|by-id|last-used  HASH  managed tenant API keys (managed-keys.ts)
 *     p:apikeys:changed             PUBSUB managed key changes, heard by every API
 *     p:{sse:<t>}:leases            ZSET   open SSE streams of a tenant, score = lease expiry
 *     p:sse:instances               ZSET   live API instances (whose leases count), score =
 *                                          heartbeat expiry (ms)
 *     p:rl:tenant:<t>, p:rl:authfail:<ip>   rate-limiter-flexible counters (it appends the id)
 *     p:rl:waitpoint:<ip>           the waitpoint URL limiter's counters (requests without an API key)
 *     p:metrics:events              HASH   event metrics of every process (counts, histogram buckets;
 *                                          HINCRBYFLOAT by each process's periodic flush, see
 *                                          event-metrics.ts; read by /metrics)
 *   Tokens (apps/api/src/tokens; one slot for the key set, so one script rotates it)
 *     p:{tokens:keys}:all           HASH   kid -> signing key JSON (public JWK, private JWK as JWE)
 *     p:{tokens:keys}:current       STRING kid of the key that signs
 *     p:{tokens:keys}:retired       HASH   kid -> when it stopped signing (ms)
 *     p:tokens:revoked              ZSET   revocation JSON, score = when it stops mattering (ms)
 *     p:tokens:used:<jti>           STRING a one-use token was used (SET NX, expires with it)
 *     p:tokens:changes              PUB/SUB "keys" (rotated) or "revoked <json>" to every API
 *
 *   BullMQ queues (BullMQ's own keys under each queue; see queue-shards.ts and queues.ts)
 *     p-bull:<tq>.sNN-KK{<tag>}:…   run queues: shard NN of K of task queue <tq>, each its own
 *                                   hash tag (a run's step jobs and their tool children share
 *                                   it); the tags' slots spread evenly over the slot space
 *     {p-bull}:schedules:…, {p-bull}:webhooks:…   schedule firings, webhook deliveries
 *     {p-bull}:steps.<agent>:…, {p-bull}:tools.<agent>:…, {p-bull}:steps|tools:…   run queues
 *                                   of earlier layouts, drained while they hold jobs
 *
 * Run, thread and tenant keys live in different slots, so the indexes (tenant and thread :runs,
 * runs:*) are written in separate commands around the run's scripts (run-record/run-index.ts).
 *
 * Id components are escaped (`%`, `:`, `{`, `}` -> %25 %3A %7B %7D) so that ids containing
 * separators can neither collide (tenant 'a:b' + thread 'c' vs tenant 'a' + thread 'b:c') nor
 * break the hash tag. Ordinary ids (uuids, slugs) are unchanged.
 *
 * Clients must not set ioredis' `keyPrefix`: channel names are not keys and would not get it.
 */

const DEFAULT_PREFIX = 'baton';

/**
 * BullMQ's key prefix of the `schedules` and `webhooks` queues and of the run queues of earlier
 * layouts (`steps.<agent>`, the legacy `steps` / `tools`): BullMQ builds its keys under it
 * (`{p-bull}:<queue>:…`), one hash tag for all of them. Run queues are sharded instead
 * (shardBullPrefix).
 */
export function bullPrefix(prefix: string): string {
  return `{${prefix}-bull}`;
}

/**
 * BullMQ's key prefix of the queue shards (`p-bull:<task queue>.sNN-KK{tag}:…`): no hash tag of
 * its own, so the tag in each shard queue's name decides its slot (queue-shards.ts).
 */
export function shardBullPrefix(prefix: string): string {
  return `${prefix}-bull`;
}

const KEY_SPECIAL = /[%:{}]/;

/** Escape one id so it is safe inside a key and inside a hash tag. */
export function keyPart(id: string): string {
  // Called for nearly every key of every command (0.7 % of the API's busy time under
  // api-throughput): ids almost never hold one of these, and a test is cheaper than a replace.
  if (!KEY_SPECIAL.test(id)) return id;
  return id.replace(
    /[%:{}]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

export interface RunKeys {
  /** Checkpoint hash. */
  readonly cp: string;
  /** Event stream. */
  readonly events: string;
  /** Pub/sub channel. */
  readonly channel: string;
  /** Lease / fencing token. */
  readonly lease: string;
  /** "Asked for while leased" mark. */
  readonly pending: string;
  /** Tool-result mailbox. */
  readonly results: string;
  /** The step job waiting for the round's tool child jobs. */
  readonly parent: string;
  /** Failed BullMQ jobs of the run. */
  readonly failed: string;
  /** The run's messages (history included), append-only: commits write only what is new. */
  readonly messages: string;
}

/** Every key of a run that must expire with it, in the order the run scripts take them. */
export type RunDataKeys = [
  cp: string,
  events: string,
  lease: string,
  pending: string,
  results: string,
  parent: string,
  failed: string,
  messages: string,
];

/** Every key of a run that must expire with it (the channel is not a key). */
export function runDataKeys(k: RunKeys): RunDataKeys {
  return [k.cp, k.events, k.lease, k.pending, k.results, k.parent, k.failed, k.messages];
}

export interface ThreadKeys {
  readonly meta: string;
  readonly messages: string;
  readonly state: string;
  readonly queue: string;
  readonly runs: string;
  readonly released: string;
}

export type ThreadDataKeys = [
  meta: string,
  queue: string,
  runs: string,
  released: string,
  messages: string,
  state: string,
];

/** Fairness state of one tenant (fairness/run-admission.ts; one hash tag: one slot). */
export interface FairTenantKeys {
  readonly where: string;
  readonly busy: string;
  readonly keys: string;
  readonly dispatched: string;
  /** HASH: `limit` (runs in progress a tenant may borrow up to), `runs` (borrowed in progress). */
  readonly borrow: string;
  /** The backlog of one fairness key. */
  queue(key: string): string;
}

export class BatonKeys {
  readonly prefix: string;

  constructor(prefix: string = DEFAULT_PREFIX) {
    if (prefix === '') throw new Error('BatonKeys: prefix must not be empty');
    this.prefix = prefix;
  }

  run(runId: string): RunKeys {
    const base = `${this.prefix}:{run:${keyPart(runId)}}`;
    return {
      cp: `${base}:cp`,
      events: `${base}:events`,
      channel: `${base}:ch`,
      lease: `${base}:lease`,
      pending: `${base}:pending`,
      results: `${base}:results`,
      parent: `${base}:parent`,
      failed: `${base}:failed`,
      messages: `${base}:messages`,
    };
  }

  /** Channel of one run (what RunEventSubscriber subscribes to). */
  channel(runId: string): string {
    return this.run(runId).channel;
  }

  thread(tenantId: string, threadId: string): ThreadKeys {
    const base = `${this.prefix}:{thread:${keyPart(tenantId)}:${keyPart(threadId)}}`;
    return {
      meta: `${base}:meta`,
      messages: `${base}:messages`,
      state: `${base}:state`,
      queue: `${base}:queue`,
      runs: `${base}:runs`,
      released: `${base}:released`,
    };
  }

  /** Every key of a thread (they expire together), in the order the thread scripts take them. */
  threadDataKeys(tenantId: string, threadId: string): ThreadDataKeys {
    const k = this.thread(tenantId, threadId);
    return [k.meta, k.queue, k.runs, k.released, k.messages, k.state];
  }

  tenantRuns(tenantId: string): string {
    return `${this.prefix}:{tenant:${keyPart(tenantId)}}:runs`;
  }

  /** Runs that should be moving (the reconciler's work list). */
  get activeRuns(): string {
    return `${this.prefix}:runs:active`;
  }

  /** Idle runs: waiting for a decision or queued behind their thread's active run. */
  get waitingRuns(): string {
    return `${this.prefix}:runs:waiting`;
  }

  /** Finished runs by the time their keys expire (index clean-up). */
  get expiringRuns(): string {
    return `${this.prefix}:runs:gc`;
  }

  /** Cancel broadcasts to every worker. */
  get control(): string {
    return `${this.prefix}:control`;
  }

  /** Agent adverts (see agent-registry): HASH agent name -> descriptor JSON (data, no code). */
  agentsKey(): string {
    return `${this.prefix}:agents`;
  }

  /** One tenant's admission state (one hash tag, so each admission script stays in one slot). */
  fairTenant(tenantId: string): FairTenantKeys {
    const base = `${this.prefix}:{fair:${keyPart(tenantId)}}`;
    return {
      where: `${base}:where`,
      busy: `${base}:busy`,
      keys: `${base}:keys`,
      dispatched: `${base}:dispatched`,
      borrow: `${base}:borrow`,
      queue: (key) => `${base}:q:${keyPart(key)}`,
    };
  }

  /** Every tenant that ever had fairness state (the sweep and /metrics walk them). */
  get fairTenants(): string {
    return `${this.prefix}:fair:tenants`;
  }

  /** Per tenant, the HSCAN cursor of its `:where` where the admission sweep resumes. */
  get fairSweepCursor(): string {
    return `${this.prefix}:fair:sweep-cursor`;
  }

  /** Every BullMQ queue a producer of this version used (workers drain the ones K left behind). */
  get queueRegistry(): string {
    return `${this.prefix}:queues`;
  }

  /** The reconciler's scan lock: one scanner at a time across workers. */
  /**
   * Shard `index` of `shards` of the timer index (timers/timer-index.ts): ZSET of timer members
   * (JSON `[kind, tenant, run, call]`) scored by when they are due (or, while claimed, by the
   * claim's expiry). Each shard is its own hash tag, so a cluster spreads them.
   */
  timerShard(index: number, shards: number): string {
    return `${this.prefix}:{timers:${String(shards)}:${String(index)}}`;
  }

  /** SET of the shard counts timers were written under (a changed count leaves none behind). */
  get timerLayouts(): string {
    return `${this.prefix}:timers:layouts`;
  }

  /** STRING counter bumped after every schedule, so an idle sweeper knows when to sweep. */
  get timersChanged(): string {
    return `${this.prefix}:timers:changed`;
  }

  get reconcilerLock(): string {
    return `${this.prefix}:reconciler:lock`;
  }

  /**
   * A waitpoint by the SHA-256 (hex) of its token: the token itself is never stored. STRING
   * (JSON record: tenant, run, call, responseSchema, expiresAt, and the first outcome), PEXPIREAT
   * at its expiry plus a day so a repeat keeps its answer until the URL dies.
   */
  waitpoint(tokenHash: string): string {
    return `${this.prefix}:wp:${tokenHash}`;
  }

  /**
   * Waitpoint completions that came before their call was suspended (its tool created the
   * waitpoint and was still running): HASH callId -> JSON {decisionId, payload}, applied when
   * the run starts waiting (RunWaits.registerWaiting).
   */
  waitpointEarly(runId: string): string {
    return `${this.prefix}:waits:early:${keyPart(runId)}`;
  }

  /**
   * The waitpoints made through the API for a run's suspended calls: HASH callId -> latest
   * expiresAt, so the run's view shows them (await.calls[].waitFor); PEXPIREAT the latest.
   */
  runWaitpoints(runId: string): string {
    return `${this.prefix}:waits:wps:${keyPart(runId)}`;
  }

  /** A tenant's waiters for one event name and key: SET of JSON [runId, callId] (one slot each). */
  eventWaiters(tenantId: string, name: string, key: string): string {
    return `${this.prefix}:{evw:${keyPart(tenantId)}:${keyPart(name)}:${keyPart(key)}}`;
  }

  /**
   * Event-wait timeouts the release before the timer index unification wrote: ZSET of JSON
   * [runId, callId, kind], score = due (ms). Nothing writes it now (an event wait's timeout is
   * its call's deadline, in the timer index); the reconciler drains the leftovers.
   */
  get waitTimeouts(): string {
    return `${this.prefix}:waits:timeouts`;
  }

  /** Where the reconciler's scan of the waiting index resumes. */
  get reconcilerWaitingCursor(): string {
    return `${this.prefix}:reconciler:waiting-cursor`;
  }

  /** Per queue, the failure time up to which the reconciler swept its failed jobs. */
  get reconcilerFailedCursor(): string {
    return `${this.prefix}:reconciler:failed-cursor`;
  }

  /** Event metrics (step/tool durations, finished runs) summed over every process. */
  get eventMetrics(): string {
    return `${this.prefix}:metrics:events`;
  }

  /** Key prefix of the per-tenant request limiter (rate-limiter-flexible appends the tenant). */
  get tenantRateLimit(): string {
    return `${this.prefix}:rl:tenant`;
  }

  /** Key prefix of the waitpoint URL limiter (no API key: per client IP; the IP is appended). */
  get waitpointRateLimit(): string {
    return `${this.prefix}:rl:waitpoint`;
  }

  /** Key prefix of the failed-authentication limiter (rate-limiter-flexible appends the IP). */
  get authFailureLimit(): string {
    return `${this.prefix}:rl:authfail`;
  }

  /** Open SSE streams of a tenant on every API instance. */
  sseLeases(tenantId: string): string {
    return `${this.prefix}:{sse:${keyPart(tenantId)}}:leases`;
  }

  /** Live API instances (their SSE leases): ZSET instance id -> heartbeat expiry (ms). */
  get sseInstances(): string {
    return `${this.prefix}:sse:instances`;
  }

  /** A bulk replay's record (JSON: its selection, progress and the replays made so far). */
  bulkReplay(tenantId: string, replayId: string): string {
    return `${this.prefix}:{replay:${keyPart(tenantId)}}:${keyPart(replayId)}`;
  }

  /**
   * Tenant API keys managed at run time (apps/api managed-keys.ts), one hash tag so that a
   * rotation updates both hashes atomically: `byHash` sha256(key) -> record (the one lookup a
   * request pays), `byId` id -> sha256, `lastUsed` id -> ms, and the channel every API hears
   * changes on.
   */
  get apiKeys(): {
    readonly byHash: string;
    readonly byId: string;
    readonly lastUsed: string;
    readonly channel: string;
  } {
    const base = `${this.prefix}:{apikeys}`;
    return {
      byHash: `${base}:by-hash`,
      byId: `${base}:by-id`,
      lastUsed: `${base}:last-used`,
      channel: `${this.prefix}:apikeys:changed`,
    };
  }

  /** One Idempotency-Key record. */
  idempotency(tenantId: string, scope: string, idemKey: string): string {
    return `${this.prefix}:{idem:${keyPart(tenantId)}}:${scope}:${keyPart(idemKey)}`;
  }

  /** A run's webhook configuration and delivery log (same slot as the run). */
  webhook(runId: string): { readonly config: string; readonly log: string } {
    const base = `${this.prefix}:{run:${keyPart(runId)}}`;
    return { config: `${base}:webhook`, log: `${base}:webhook-log` };
  }

  /** Runs whose webhooks the sweeper checks (score = when next). */
  get webhookRuns(): string {
    return `${this.prefix}:webhooks:runs`;
  }

  /** The webhook sweeper's lock: one sweeper at a time across workers. */
  get webhookSweepLock(): string {
    return `${this.prefix}:webhooks:sweep-lock`;
  }

  /** Finished runs the archive does not hold yet (score = when they finished, ms). */
  get archivePending(): string {
    return `${this.prefix}:archive:pending`;
  }

  /** The archiver's lock: one archiver at a time across workers (SET NX PX). */
  get archiveLock(): string {
    return `${this.prefix}:archive:lock`;
  }

  /** Live workers (see agent-liveness): ZSET worker id -> heartbeat expiry (ms). */
  get liveWorkers(): string {
    return `${this.prefix}:workers:live`;
  }

  /** Which agent set serves a task queue (see task-queue-pools.ts): its signature, with a TTL. */
  taskQueuePool(taskQueue: string): string {
    return `${this.prefix}:task-queue:${keyPart(taskQueue)}:pool`;
  }

  /** Step concurrency of each worker (see agent-liveness): HASH worker id -> "<slots>\t<until ms>". */
  get workerCapacity(): string {
    return `${this.prefix}:workers:capacity`;
  }

  /** Workers of one agent (see agent-liveness): ZSET worker id -> membership expiry (ms). */
  agentWorkers(agent: string): string {
    return `${this.prefix}:agents:live:${keyPart(agent)}`;
  }

  // --- Agent versions (agent-versions.ts) ------------------------------------------------------

  /** HASH `<agent>\n<version>` -> AgentVersionAdvert JSON (kept after its workers are gone). */
  get agentVersions(): string {
    return `${this.prefix}:agent-versions`;
  }

  /** HASH agent -> JSON { version, history }: the version an operator promoted (absent: newest live). */
  get agentCurrentVersions(): string {
    return `${this.prefix}:agent-versions:current`;
  }

  /** Workers of one agent version: ZSET worker id -> membership expiry (ms), as agentWorkers. */
  agentVersionWorkers(agent: string, version: string): string {
    return `${this.prefix}:agents:live-version:${keyPart(version)}:${keyPart(agent)}`;
  }

  /** SET of `<agent>\n<version>` that have runs parked for want of a live worker. */
  get parkedVersions(): string {
    return `${this.prefix}:agent-versions:parked`;
  }

  /** HASH runId -> JSON step target: runs of one version parked with no live worker of it. */
  parkedVersionRuns(agent: string, version: string): string {
    return `${this.prefix}:agent-versions:parked:${keyPart(version)}:${keyPart(agent)}`;
  }

  /** SETs of the unfinished runs created on one version: all of them, and those waiting. */
  versionRuns(agent: string, version: string): { active: string; waiting: string } {
    const base = `${this.prefix}:agent-versions:runs:${keyPart(version)}:${keyPart(agent)}`;
    return { active: `${base}:active`, waiting: `${base}:waiting` };
  }

  // --- Scheduled runs -------------------------------------------------------------------------

  /** One schedule's keys (all in the tenant's schedule slot). */
  schedule(tenantId: string, scheduleId: string): ScheduleKeys {
    const base = `${this.prefix}:{sched:${keyPart(tenantId)}}`;
    const rec = `${base}:s:${keyPart(scheduleId)}`;
    return {
      index: `${base}:index`,
      record: rec,
      firings: `${rec}:firings`,
      firing: `${rec}:firing`,
      runs: `${rec}:runs`,
    };
  }

  /** Every schedule of every tenant, for the repair sweep. */
  get allSchedules(): string {
    return `${this.prefix}:schedules:all`;
  }

  get scheduleRepairLock(): string {
    return `${this.prefix}:schedules:repair-lock`;
  }

  get scheduleRepairCursor(): string {
    return `${this.prefix}:schedules:repair-cursor`;
  }

  /** Baton's token signing keys, revocations and one-use marks (apps/api/src/tokens). */
  get tokens(): TokenKeys {
    const set = `${this.prefix}:{tokens:keys}`;
    return {
      keys: `${set}:all`,
      current: `${set}:current`,
      retired: `${set}:retired`,
      revoked: `${this.prefix}:tokens:revoked`,
      channel: `${this.prefix}:tokens:changes`,
      used: (jti) => `${this.prefix}:tokens:used:${keyPart(jti)}`,
    };
  }
}

export type TokenKeys = {
  readonly keys: string;
  readonly current: string;
  readonly retired: string;
  readonly revoked: string;
  readonly channel: string;
  used(jti: string): string;
};

export type ScheduleKeys = {
  readonly index: string;
  readonly record: string;
  readonly firings: string;
  readonly firing: string;
  readonly runs: string;
};

/** Field of a call's result in a run's tool-result mailbox (`{run}:results`): per call and attempt. */
export function mailboxField(toolCallId: string, attempt: number): string {
  return `${toolCallId}#${attempt}`;
}
