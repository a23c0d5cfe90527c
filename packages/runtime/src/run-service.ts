import { randomUUID } from 'node:crypto';
import {
  BatonError,
  RunDoneError,
  UnknownAgentError,
  VersionConflictError,
  activityOf,
  runCommands,
  type Clock,
  type RunArchive,
} from '@baton/core';
import {
  type Checkpoint,
  type CreateRunRequest,
  type CreatedRunWebhook,
  type Decision,
  type DecisionInput,
  type QueuedInfo,
  type RunEvent,
  type RunStatus,
  type RunWebhooksResponse,
} from '@baton/protocol';
import { AgentCatalog, specOf } from './agent-registry.ts';
import { broadcastCancel } from './control-channel.ts';
import type { BatonQueues } from './queues.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { ListRunsQuery, RedisRunStore, RunPage } from './redis/redis-run-store.ts';
import { ArchiveReads } from './archive/archive-reads.ts';
import type { RedisClient } from './redis/scripts.ts';
import {
  jsonBytes,
  type RedisThreadStore,
  type ThreadPage,
  type ThreadSnapshot,
} from './redis/thread-store.ts';
import type { Durability } from './redis/durability.ts';
import type { RunCommitter, Loaded } from './run-committer.ts';
import { RunIndex, expiringMember } from './run-record/run-index.ts';
import type { WebhookOutbox } from './webhooks/webhook-outbox.ts';
import {
  DecisionRouting,
  type RoutedDecisions,
  type SubmittedDecisions,
} from './decision-routing.ts';
import { RunNotFoundError } from './errors/run-not-found-error.ts';
import { RunAlreadyReleasedError } from './errors/run-already-released-error.ts';
import type { RunAdmission } from './fairness/run-admission.ts';
import { ThreadNotFoundError } from './errors/thread-not-found-error.ts';
import { ThreadTooLargeError } from './errors/thread-too-large-error.ts';

export interface RunServiceDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly committer: RunCommitter;
  readonly durability: Durability;
  readonly clock: Clock;
  readonly ids?: () => string;
  /** Fairness admission (docs/fairness.md); absent: every run is enqueued at once. */
  readonly admission?: RunAdmission;
  /** Webhooks of new runs (their own and their tenant's); none when absent. */
  readonly webhooks?: WebhookOutbox;
  /** ARCHIVE_URL's archive: reads fall through to it once Redis has let a run go. */
  readonly archive?: RunArchive;
}

export interface CreatedRun {
  readonly runId: string;
  readonly threadId: string;
  readonly turnId: string;
  readonly status: Checkpoint['status'];
  /** Set when the run waits behind the thread's active run (multitask 'enqueue' / 'interrupt'). */
  readonly queuedBehind?: string;
  /** Set when the run waits for a slot of its tenant or fairness key (docs/fairness.md). */
  readonly queued?: QueuedInfo;
  /** The run's own webhook, with its generated secret (shown once). */
  readonly webhook?: CreatedRunWebhook;
}

/** See RunService.createRun. */
export interface CreateRunOptions {
  /**
   * A run id derived from what triggers the run (a scheduled firing, an Idempotency-Key), so a
   * trigger handled twice creates one run: the second attempt fails with VersionConflictError and
   * leaves the thread to the first, unless `onExisting` is 'answer'.
   */
  readonly runId?: string;
  /**
   * The id of the thread made up for a request that names none (derived with runId, so that a
   * resent request lands on the thread of its first attempt).
   */
  readonly threadId?: string;
  /**
   * 'answer' (with runId): a run that exists under runId already is the answer. The request is a
   * resend of one whose first attempt created the run and then failed (its reply, or its start):
   * the run is answered as it stands, and what that attempt still owed it is done now.
   */
  readonly onExisting?: 'conflict' | 'answer';
}

/** See RunService.follow. */
export type RunFollowState =
  { readonly status: RunStatus; readonly lastSeq: number } | 'absent' | 'hidden';

function threadBusy(threadId: string, runId: string): BatonError {
  return new BatonError(
    'thread_busy',
    `thread ${threadId} has an active or queued run (${runId}); cancel it and delete the thread once it is done`,
    { threadId, activeRunId: runId },
  );
}

/** healLater: its first try, the longest wait between tries, and how long it keeps trying. */
const HEAL_FIRST_DELAY_MS = 100;
const HEAL_MAX_DELAY_MS = 2_000;
const HEAL_FOR_MS = 120_000;

/**
 * A create resent under an id whose run ran once and is no longer there to answer (deleted, or
 * let go with no archive to read it from): refused rather than run a second time.
 */
function spentKey(runId: string, what = 'has ended and is no longer kept'): BatonError {
  return new BatonError(
    'idempotency_conflict',
    `this request already created run ${runId}, which ${what}; send it with a new Idempotency-Key to run it again`,
    { runId },
  );
}

/** Which page of a thread to read (RedisThreadStore.page). */
export interface ThreadPageAt {
  readonly before: number | null;
  readonly limit: number;
  readonly maxBytes: number;
}

/** Messages of a thread page (GET /v1/threads/:id) unless `limit` says otherwise; at most 1,000. */
export const THREAD_PAGE_DEFAULT = 100;
/** A page's messages stop short of this many bytes of JSON (one message at least). */
export const THREAD_PAGE_MAX_BYTES = 1024 * 1024;

/** What a thread that nobody has written yet loads as. */
const EMPTY_THREAD: Pick<ThreadSnapshot, 'messages' | 'state' | 'runIds'> & {
  readonly reference?: undefined;
} = { messages: [], state: {}, runIds: [] };

/**
 * The control plane shared by the HTTP API and tests: create runs, accept decisions, cancel.
 * It needs no agent code: agent specs come from what workers advertise.
 */
export class RunService {
  readonly catalog: AgentCatalog;
  private readonly deps: RunServiceDeps;
  private readonly ids: () => string;
  /** Checkpoints this service read from the store (see submitDecisions' `current`). */
  private readonly issued = new WeakSet<Checkpoint>();
  /** Reads that fall through to the archive (null without one). */
  private readonly archived: ArchiveReads | null;
  /** Checkpoints `load` found only in the archive (their events are there too). */
  private readonly fromArchive = new WeakSet<Checkpoint>();

  constructor(deps: RunServiceDeps) {
    this.deps = deps;
    this.archived = deps.archive
      ? new ArchiveReads({ archive: deps.archive, store: deps.store, threads: deps.threads })
      : null;
    this.catalog = new AgentCatalog(deps.redis, deps.keys);
    this.ids = deps.ids ?? randomUUID;
  }

  /** See CreateRunOptions for runs whose id derives from their trigger, and resends. */
  async createRun(
    tenantId: string,
    request: CreateRunRequest,
    opts: CreateRunOptions = {},
  ): Promise<CreatedRun> {
    const { deps } = this;
    const answerExisting = opts.onExisting === 'answer';
    if (answerExisting && opts.runId !== undefined) {
      const existing =
        (await this.resumeCreated(tenantId, opts.runId, request)) ??
        (await this.answerArchived(tenantId, opts.runId, request));
      if (existing) return existing;
    }
    const descriptor = await this.catalog.advert(request.agent);
    if (!descriptor)
      throw new UnknownAgentError(
        request.agent,
        (await this.catalog.list()).map((a) => a.name),
      );
    deps.queues.taskQueues.learn(request.agent, descriptor.taskQueue);
    // Checked (a webhook target must be public) before anything is written.
    const hooks = (await deps.webhooks?.endpointsFor(tenantId, request.webhook)) ?? {
      endpoints: [],
    };
    const webhook = hooks.created ? { webhook: hooks.created } : {};
    const input = request.input.messages;
    const inputSize = { messages: input.length, bytes: jsonBytes(input) };
    const { limits } = deps.threads;
    // An input over the limits alone is refused before anything is written (no index entry).
    if (inputSize.messages > limits.maxMessages || inputSize.bytes > limits.maxBytes)
      throw new ThreadTooLargeError(
        request.threadId ?? 'new',
        { messages: 0, bytes: 0 },
        limits,
        inputSize,
      );
    const runId = opts.runId ?? this.ids();
    const threadId = request.threadId ?? opts.threadId ?? this.ids();
    const strategy = request.options?.multitask ?? 'reject';
    if (request.threadId !== undefined) await this.settleActiveRun(tenantId, threadId, runId);
    // One time for the run's createdAt and its thread index score: the thread's run list and
    // the tenant's show the same createdAt (and the archive's lists, which read the run's).
    const createdAt = deps.clock.now();
    const index = new RunIndex(deps.redis, deps.keys);
    // A thread made up here has no run yet: acquiring it cannot find it busy or queue behind
    // anyone, so the run's entry in the active index goes out with the acquire (one round trip
    // for both, still before the run exists). Should the acquire fail, the entry is one whose
    // run never came to be, which the reconciler drops.
    const indexing = request.threadId === undefined ? index.add('active', runId, createdAt) : null;
    void indexing?.catch(() => undefined);
    const acquired = await deps.threads
      .acquire(tenantId, threadId, runId, strategy, createdAt, input)
      .catch((error: unknown) => {
        // The thread remembers the run's release: it existed, ended and is kept no more (Redis
        // let it go, no archive has it). Run again it would execute twice under one id.
        if (answerExisting && RunAlreadyReleasedError.isInstance(error)) throw spentKey(runId);
        throw error;
      });
    if (acquired.kind === 'too_large')
      throw new ThreadTooLargeError(threadId, acquired, limits, inputSize);
    if (acquired.kind === 'busy')
      throw new BatonError(
        'thread_busy',
        `thread ${threadId} already has an active run (${acquired.activeRunId}); pass options.multitask "enqueue" or "interrupt" to queue behind it or replace it`,
        {
          threadId,
          activeRunId: acquired.activeRunId,
        },
      );
    try {
      // A thread this request names may hold a conversation; one made up here is empty.
      const thread =
        request.threadId === undefined
          ? EMPTY_THREAD
          : this.archived
            ? await this.archived.threadForRun(tenantId, threadId)
            : await deps.threads.loadForRun(tenantId, threadId);
      // The run's turn counts it among the thread's runs: the acquire listed it in the thread's
      // index already; a thread made up here has it as its only run.
      const turnId = `turn-${String(request.threadId === undefined ? 1 : thread.runIds.length)}`;
      const t = runCommands.create(
        specOf(descriptor),
        {
          identity: {
            runId,
            threadId,
            turnId,
            tenantId,
            agent: request.agent,
            ...(request.options?.priority === undefined
              ? {}
              : { priority: request.options.priority }),
            ...(request.options?.fairnessKey === undefined
              ? {}
              : { fairnessKey: request.options.fairnessKey }),
          },
          input: request.input.messages,
          ...(request.options ? { options: request.options } : {}),
          history: acquired.kind === 'acquired' ? thread.messages : [],
          threadState: thread.state,
        },
        createdAt,
      );
      // Indexed before it exists, so no crash can leave a run nobody looks at (the reconciler
      // drops an entry whose run never came to be).
      const live = acquired.kind === 'acquired' ? 'active' : 'waiting';
      if (indexing === null) await index.add(live, runId, t.checkpoint.updatedAt);
      else {
        await indexing;
        if (live !== 'active') await index.move(live, runId, t.checkpoint.updatedAt);
      }
      await deps.webhooks?.register(
        runId,
        tenantId,
        hooks.endpoints,
        request.options?.metadata ?? {},
      );
      // The thread acquire above listed the run in the thread's index already. The run
      // references the thread's history rather than copying it (history-reference.ts).
      const created = await deps.store.create(t.checkpoint, t.events, {
        threadIndexed: true,
        history: acquired.kind === 'acquired' ? thread.reference : undefined,
      });
      if (acquired.kind === 'acquired') {
        const queued = await this.start(t.checkpoint.identity, 'start', created.version);
        await deps.durability.acknowledge();
        return {
          runId,
          threadId,
          turnId,
          status: 'created',
          ...webhook,
          ...(queued ? { queued } : {}),
        };
      }
      if (acquired.kind === 'interrupt') await this.cancel(tenantId, acquired.activeRunId);
      await deps.durability.acknowledge();
      return {
        runId,
        threadId,
        turnId,
        status: 'created',
        queuedBehind: acquired.activeRunId,
        ...webhook,
      };
    } catch (error) {
      // Another attempt of the same request created the run first (or this one did, and lost
      // the create's reply): answered as a resend.
      if (answerExisting && opts.runId !== undefined && VersionConflictError.isInstance(error)) {
        const existing = await this.resumeCreated(tenantId, runId, request);
        if (existing) return existing;
      }
      // Only a run known never to have come to be gives its thread and webhooks back, abandoned
      // rather than released: nothing remembers it, so a resend of the request (the same derived
      // runId) acquires the thread again and creates it. One that was created (its start, or a
      // write or reply after its own, failed) keeps them: releasing the thread would let a later
      // run of the thread run beside it. It is completed in the background as soon as Redis
      // answers (healLater), by a resend under the same derived runId (resumeCreated), and else
      // by the reconciler (it is in the active index, added before the create). A failed read
      // (null) may be either: healed if it exists; a thread held by a run that never came to be
      // is given back by the next create on it (settleActiveRun).
      const exists = await deps.store.meta(runId).then(
        (meta) => meta !== null,
        () => null,
      );
      if (exists === false) {
        await this.abandon(tenantId, threadId, runId).catch(() => undefined);
        await deps.webhooks?.forget(runId).catch(() => undefined);
      } else this.healLater(tenantId, runId, request);
      throw error;
    }
  }

  /**
   * A create sent again after an attempt of it created the run: the run as it stands (null: no
   * such run of this tenant), with what that attempt still owed it done now: started when it
   * holds its thread and has work, the run it queued behind interrupted ('interrupt'). A spare
   * start is harmless: admission's request keeps a parked run's place, and a step job for a
   * version that has a live one is deduplicated (one for a run that moved on is a no-op pass).
   */
  private async resumeCreated(
    tenantId: string,
    runId: string,
    request: CreateRunRequest,
  ): Promise<CreatedRun | null> {
    const { deps } = this;
    const stored = await deps.store.loadHeadForTenant(runId, tenantId);
    if (!stored) return null;
    const { checkpoint: cp } = stored;
    const { threadId, turnId } = cp.identity;
    // What the create writes after the run's own (its listing, its fairness fields): the first
    // attempt may have failed before any of it. Its thread index was written by its acquire.
    await deps.store.completeCreate(cp, true);
    const webhook = await deps.webhooks?.createdWebhook(runId, request.webhook);
    const answer = { runId, threadId, turnId, status: cp.status, ...(webhook ? { webhook } : {}) };
    if (cp.status === 'done') return answer;
    const thread = deps.keys.thread(tenantId, threadId);
    const active = await deps.redis.hget(thread.meta, 'activeRunId');
    if (
      active !== null &&
      active !== runId &&
      (await deps.redis.lpos(thread.queue, runId)) !== null
    ) {
      if (request.options?.multitask === 'interrupt') await this.cancel(tenantId, active);
      await deps.durability.acknowledge();
      return { ...answer, queuedBehind: active };
    }
    // Its activity and version as stored with its last commit (the head read has no messages).
    const meta = active === runId ? await deps.store.meta(runId) : null;
    const queued =
      meta?.activity === 'active' ? await this.start(cp.identity, 'start', meta.version) : null;
    await deps.durability.acknowledge();
    return { ...answer, ...(queued ? { queued } : {}) };
  }

  /**
   * A create sent again whose run Redis no longer has: the archived run as it stands (done), a
   * 409 for one that was deleted, null when the archive knows nothing of it (or there is none).
   * Never created again: it ran once under this id already.
   */
  private async answerArchived(
    tenantId: string,
    runId: string,
    request: CreateRunRequest,
  ): Promise<CreatedRun | null> {
    // Asked of every keyed create (a first attempt looks the same as a resend after its key
    // expired). An archive that cannot answer does not block creates: the run is created as
    // without an archive (a resend after its key expired, in a PostgreSQL outage, may run again).
    const gone = this.archived ? await this.archived.gone(tenantId, runId).catch(() => null) : null;
    if (gone === null) return null;
    if (gone === 'deleted') throw spentKey(runId, 'was deleted');
    const { threadId, turnId } = gone.checkpoint.identity;
    const webhook = await this.deps.webhooks?.createdWebhook(runId, request.webhook);
    return {
      runId,
      threadId,
      turnId,
      status: gone.checkpoint.status,
      ...(webhook ? { webhook } : {}),
    };
  }

  /**
   * Gives the thread back from a run that never came to be (RedisThreadStore.abandon), and
   * starts the run promoted in its place, as a release would.
   */
  private async abandon(tenantId: string, threadId: string, runId: string): Promise<void> {
    const promoted = await this.deps.threads.abandon(tenantId, threadId, runId);
    if (promoted === null) return;
    const next = await this.deps.store.load(promoted);
    if (!next) return;
    await new RunIndex(this.deps.redis, this.deps.keys).move(
      'active',
      promoted,
      this.deps.clock.now(),
    );
    await this.start(next.checkpoint.identity, 'start', next.version);
  }

  /**
   * A create that failed after its run may have been written: what it owed the run (its
   * listing, its start) is done in the background as soon as Redis answers again, so the run
   * moves within moments of an outage's end even when its client never resends (it would wait
   * for the reconciler: twice the lease TTL and more). Tried with a growing delay for
   * HEAL_FOR_MS; a resend or the reconciler does it after that. A spare start is harmless (see
   * resumeCreated).
   */
  private healLater(tenantId: string, runId: string, request: CreateRunRequest): void {
    const until = Date.now() + HEAL_FOR_MS;
    const attempt = (delayMs: number): void => {
      setTimeout(() => {
        this.resumeCreated(tenantId, runId, request).catch(() => {
          if (Date.now() < until) attempt(Math.min(delayMs * 2, HEAL_MAX_DELAY_MS));
        });
      }, delayMs).unref();
    };
    attempt(HEAL_FIRST_DELAY_MS);
  }

  /** The run's next job, or its place in its key's backlog when it has no slot (admission). */
  private async start(
    identity: Checkpoint['identity'],
    reason: 'start' | 'decision',
    version: number,
  ): Promise<QueuedInfo | null> {
    if (this.deps.admission) return this.deps.admission.request(identity, reason, version);
    await this.deps.queues.enqueueStep(identity, reason, version);
    return null;
  }

  /** Why the run waits for a slot and where it stands; null when it does not (docs/fairness.md). */
  async queuedInfo(identity: Checkpoint['identity']): Promise<QueuedInfo | null> {
    return (await this.deps.admission?.queued(identity)) ?? null;
  }

  /**
   * A run that finished releases its thread right after its final commit; a client that saw
   * run.finished and starts the next turn at once must not find the thread still held by it, nor
   * by a run whose keys are gone. Both are released here first (release is idempotent).
   */
  private async settleActiveRun(tenantId: string, threadId: string, runId: string): Promise<void> {
    const { deps } = this;
    const active = await deps.redis.hget(deps.keys.thread(tenantId, threadId).meta, 'activeRunId');
    // The run being created holds it already (another attempt under the same opts.runId is
    // between its acquire and its create): not a leftover.
    if (!active || active === runId) return;
    const meta = await deps.store.meta(active);
    if (meta && meta.status !== 'done') return;
    const loaded = meta ? await deps.store.load(active) : null;
    if (loaded) await deps.committer.finished(loaded.checkpoint);
    // A holder that never came to be (its create failed): abandoned, not released, so that a
    // resend of its request can still create it.
    else await this.abandon(tenantId, threadId, active);
  }

  async load(tenantId: string, runId: string): Promise<Loaded> {
    let stored = await this.deps.store.loadForTenant(runId, tenantId);
    if (!stored && this.archived) {
      stored = await this.archived.loadRun(tenantId, runId);
      if (stored) this.fromArchive.add(stored.checkpoint);
    }
    if (!stored) throw new RunNotFoundError(runId);
    this.issued.add(stored.checkpoint);
    return stored;
  }

  /**
   * Validates against the run's tickets and stores them durably; all or nothing. A decision
   * resent with the same id and body gets its original answer, whatever happened since; a new
   * one for a finished run, or for a run being cancelled, is refused (409), never accepted and
   * then dropped.
   *
   * Decisions for a descendant's calls (agent-as-tool) may be sent to an ancestor: each goes to
   * the run that holds its call (DecisionRouting.route), and the answer lists those runs' answers
   * under `routed`. Every target run is checked (its ancestors, its tickets) before any is
   * written, so a request refused for one run changes no run (the typed error of the first
   * refusal is thrown). Runs can still change between that check and the commits; each run's
   * commit is all-or-nothing on its own, and a child cancelled after it accepted a decision
   * records that decision as discarded in its own log.
   *
   * Each target's conversation is read once, and the checkpoint read is the one committed over;
   * the other runs of the tree are read without their messages. `current`: the run as this
   * service returned it moments ago (load, loadWithEvents), used instead of reading it again; a
   * stale one costs a version conflict and a reload, never a wrong write. Anything else (a copy,
   * another run's) is ignored and the run is read.
   */
  async submitDecisions(
    tenantId: string,
    runId: string,
    inputs: readonly DecisionInput[],
    opts: { readonly current?: Loaded } = {},
  ): Promise<SubmittedDecisions> {
    const { current } = opts;
    const root =
      current !== undefined &&
      this.issued.has(current.checkpoint) &&
      current.checkpoint.identity.runId === runId &&
      current.checkpoint.identity.tenantId === tenantId
        ? current
        : await this.load(tenantId, runId);
    const routing = new DecisionRouting(this.deps.store, tenantId, root.checkpoint);
    const groups = await routing.route(inputs);
    const own = groups.get(runId);
    if (own !== undefined && groups.size === 1) return this.decide(routing, root, own);
    const targets = new Map<string, Loaded>();
    for (const [target, decisions] of groups) {
      const loaded = target === runId ? root : await this.load(tenantId, target);
      await routing.checkAncestors(loaded.checkpoint, decisions);
      // Thrown here (nothing written yet) when the run would refuse them.
      runCommands.receiveDecisions(
        loaded.checkpoint,
        decisions.map((d, i) => ({ ...d, decisionId: d.decisionId ?? `precheck-${String(i)}` })),
        this.deps.clock.now(),
      );
      targets.set(target, loaded);
    }
    let answer = { accepted: [] as string[], duplicates: [] as string[] };
    const routed: RoutedDecisions[] = [];
    for (const [target, decisions] of groups) {
      const result = await this.decide(routing, targets.get(target) ?? root, decisions);
      if (target === runId) answer = { accepted: result.accepted, duplicates: result.duplicates };
      else routed.push({ runId: target, accepted: result.accepted, duplicates: result.duplicates });
    }
    // The run's status now (its children's commits do not write it, a worker may have).
    const progress = await this.deps.store.progress(runId);
    if (!progress || progress.tenantId !== tenantId) throw new RunNotFoundError(runId);
    return { ...answer, status: progress.status, routed };
  }

  /** Commits decisions for the run `loaded` (read by the caller) holds the calls of. */
  private async decide(
    routing: DecisionRouting,
    loaded: Loaded,
    inputs: readonly DecisionInput[],
  ): Promise<SubmittedDecisions> {
    const decisions: Decision[] = inputs.map((d) => ({
      ...d,
      decisionId: d.decisionId ?? this.ids(),
    }));
    await routing.checkAncestors(loaded.checkpoint, decisions);
    let result: { accepted: string[]; duplicates: string[] } = { accepted: [], duplicates: [] };
    const committed = await this.deps.committer.commitCommand(loaded, (cp) => {
      const t = runCommands.receiveDecisions(cp, decisions, this.deps.clock.now());
      result = { accepted: t.accepted.map((d) => d.decisionId), duplicates: t.duplicates };
      return t.accepted.length > 0 ? t : null;
    });
    const { identity } = loaded.checkpoint;
    // Nothing committed: every decision was recorded already. This is a resend, possibly of a
    // request whose commit applied and whose scheduling (or reply) then failed: the run gets the
    // pass that commit owed it, as it stands now. A spare one is harmless (see resumeCreated).
    const owed = committed
      ? { activity: activityOf(committed.checkpoint), version: committed.version }
      : await this.deps.store.meta(identity.runId);
    // A resumed run asks for a slot again (it gave its own back when it began to wait).
    if (owed?.activity === 'active') await this.start(identity, 'decision', owed.version);
    else if (owed && (committed !== null || owed.activity !== 'done'))
      await this.deps.queues.enqueueStep(identity, 'decision', owed.version);
    await this.deps.durability.acknowledge();
    return { ...result, status: (committed ?? loaded).checkpoint.status };
  }

  /**
   * Idempotent. A created run ends at once; a running or waiting one records the request (an
   * event) and is told to stop everywhere; it ends Cancelled at its next phase boundary.
   */
  async cancel(tenantId: string, runId: string): Promise<{ status: Checkpoint['status'] }> {
    const loaded = await this.load(tenantId, runId);
    if (loaded.checkpoint.status === 'done') return { status: 'done' };
    const committed = await this.deps.committer
      .commitCommand(loaded, (cp) =>
        cp.status === 'done' || cp.cancelRequested
          ? null
          : runCommands.requestCancel(cp, this.deps.clock.now()),
      )
      .catch((error: unknown) => {
        if (RunDoneError.isInstance(error)) return null;
        throw error;
      });
    const current = committed ?? (await this.load(tenantId, runId));
    await broadcastCancel(this.deps.redis, this.deps.keys, runId);
    if (current.checkpoint.status !== 'done')
      await this.deps.queues.enqueueStep(current.checkpoint.identity, 'cancel', current.version);
    await this.deps.durability.acknowledge();
    return { status: current.checkpoint.status };
  }

  /**
   * Deletes a finished run, and what it added to its thread: its messages leave the thread's
   * history, and a thread left with no run is deleted whole, so a later run on the same threadId
   * neither shows nor gives the model anything of it (409 run_active for a run that has not
   * finished: cancel it first).
   */
  async deleteRun(tenantId: string, runId: string): Promise<void> {
    const hot = await this.deps.store.loadForTenant(runId, tenantId);
    const loaded = hot ?? (await this.archived?.loadRun(tenantId, runId)) ?? null;
    if (!loaded) throw new RunNotFoundError(runId);
    if (loaded.checkpoint.status !== 'done')
      throw new BatonError(
        'run_active',
        `run ${runId} has not finished; cancel it (POST /v1/runs/${runId}/cancel) and delete it once it is done`,
        { runId },
      );
    // The archive first (its tombstone also stops an archiver holding the run in memory): a
    // crash after it leaves the Redis copy for a retried DELETE, never an archived run that
    // a later read or a rehydrated thread would bring back.
    await this.archived?.deleteRun(loaded.checkpoint);
    if (hot) await this.purgeRun(loaded.checkpoint);
    else await this.purgeArchivedRun(loaded.checkpoint);
    await this.deps.durability.acknowledge();
  }

  /**
   * What Redis may still hold of a run only the archive had: its messages in a thread Redis
   * still has, its index entries. Not released again: its release is long done, and a thread
   * rehydrated since would take its messages a second time.
   */
  private async purgeArchivedRun(cp: Checkpoint): Promise<void> {
    const { tenantId, threadId, runId } = cp.identity;
    const own = cp.messages.slice(cp.historyLength).map((m) => m.id);
    await this.deps.threads.forgetRun(tenantId, threadId, runId, own);
    await this.deps.store.dropFromIndexes(tenantId, threadId, runId);
    await new RunIndex(this.deps.redis, this.deps.keys).forgetExpiring(expiringMember(cp));
    await this.deps.webhooks?.forget(runId);
  }

  /**
   * The thread first, then what else holds the run, the run's own keys last: an error anywhere
   * leaves the run, so a retried DELETE finds it and finishes the job (each step is idempotent);
   * never a run that is gone while its messages, its webhooks or its index entries stay.
   */
  private async purgeRun(cp: Checkpoint): Promise<void> {
    const { tenantId, threadId, runId } = cp.identity;
    const own = cp.messages.slice(cp.historyLength).map((m) => m.id);
    // Released first (idempotent), so a release still to come cannot append them afterwards.
    await this.deps.committer.releaseThread(cp);
    const forgotten = await this.deps.threads.forgetRun(tenantId, threadId, runId, own);
    if (forgotten.kind === 'active')
      throw new BatonError('conflict', `run ${runId} still holds its thread; retry the delete`, {
        runId,
      });
    await this.forgetFinished(cp);
    await this.deps.store.deleteRun(runId, tenantId);
  }

  /** What holds a finished run besides its keys and its thread (idempotent). */
  private async forgetFinished(cp: Checkpoint): Promise<void> {
    await new RunIndex(this.deps.redis, this.deps.keys).forgetExpiring(expiringMember(cp));
    await this.deps.webhooks?.forget(cp.identity.runId);
  }

  /**
   * Deletes a thread and its (finished) runs. Refused with 409 thread_busy while a run is active
   * or queued on it. The runs go first, the thread last: an error in between leaves the thread
   * with the runs not deleted yet, and a retried DELETE deletes them (a thread deleted first left
   * them listed for good: the retry found no thread).
   */
  async deleteThread(tenantId: string, threadId: string): Promise<{ runs: number }> {
    // Only who holds the thread and its run ids: no message is read (before 0).
    const hot = await this.deps.threads.page(tenantId, threadId, {
      before: 0,
      limit: 0,
      maxBytes: 0,
    });
    const busy = hot.activeRunId ?? hot.queued[0];
    if (busy !== undefined) throw threadBusy(threadId, busy);
    let archivedRuns: string[] = [];
    if (this.archived) {
      // The archive first (as deleteRun); its tombstones also stop an archiver holding them.
      await this.archived.forgetRuns(tenantId, hot.runIds);
      archivedRuns = await this.archived.deleteThread(tenantId, threadId);
    }
    for (const runId of hot.runIds) await this.deleteThreadRun(tenantId, threadId, runId);
    const outcome = await this.deps.threads.delete(tenantId, threadId);
    if (outcome.kind === 'busy') throw threadBusy(threadId, outcome.runId);
    // Runs that joined (and finished) since the thread was read.
    const late =
      outcome.kind === 'deleted' ? outcome.runIds.filter((id) => !hot.runIds.includes(id)) : [];
    await this.archived?.forgetRuns(tenantId, late);
    for (const runId of late) await this.deleteThreadRun(tenantId, threadId, runId);
    const runs = new Set([...hot.runIds, ...late, ...archivedRuns]).size;
    if (outcome.kind === 'missing' && runs === 0) throw new ThreadNotFoundError(threadId);
    await this.deps.durability.acknowledge();
    return { runs };
  }

  /** One finished run of a thread being deleted: 409 thread_busy for one that has not finished. */
  private async deleteThreadRun(tenantId: string, threadId: string, runId: string): Promise<void> {
    const loaded = await this.deps.store.loadForTenant(runId, tenantId);
    if (loaded) await this.forgetFinished(loaded.checkpoint);
    else await this.deps.webhooks?.forget(runId);
    const outcome = await this.deps.store.deleteRun(runId, tenantId);
    if (outcome === 'active') throw threadBusy(threadId, runId);
  }

  /*
   * Reads for the API and embedders, each scoped to a tenant: another tenant's run is a missing
   * one (RunNotFoundError, or null/'absent' where a missing run is an answer), and is never read
   * past its tenant field.
   */

  /** Seq of the run's last event (0: none yet), read without the checkpoint. */
  async lastSeq(tenantId: string, runId: string): Promise<number> {
    const seq =
      (await this.deps.store.lastSeqForTenant(runId, tenantId)) ??
      (await this.archived?.lastSeq(tenantId, runId)) ??
      null;
    if (seq === null) throw new RunNotFoundError(runId);
    return seq;
  }

  /**
   * lastSeq(), and whether the run is one only the archive still has (its events are read with
   * archivedEvents then, nothing of it is live).
   */
  async logEnd(tenantId: string, runId: string): Promise<{ lastSeq: number; archived: boolean }> {
    const hot = await this.deps.store.lastSeqForTenant(runId, tenantId);
    if (hot !== null) return { lastSeq: hot, archived: false };
    const cold = (await this.archived?.lastSeq(tenantId, runId)) ?? null;
    if (cold === null) throw new RunNotFoundError(runId);
    return { lastSeq: cold, archived: true };
  }

  /** The run's events with seq > afterSeq, in order. */
  async events(tenantId: string, runId: string, afterSeq = 0): Promise<RunEvent[]> {
    const events = await this.archivedEvents(tenantId, runId, afterSeq);
    if (events) return events;
    await this.lastSeq(tenantId, runId);
    return this.deps.store.readEvents(runId, afterSeq);
  }

  /**
   * The events after afterSeq of a run Redis has let go of, from the archive; null while Redis
   * has the run (or without an archive): read it there, live.
   */
  async archivedEvents(tenantId: string, runId: string, afterSeq = 0): Promise<RunEvent[] | null> {
    return this.archived ? this.archived.events(tenantId, runId, afterSeq) : null;
  }

  /** The run's checkpoint and its whole event log (what a snapshot is folded from). */
  async loadWithEvents(tenantId: string, runId: string): Promise<Loaded & { events: RunEvent[] }> {
    const loaded = await this.load(tenantId, runId);
    const archived = this.fromArchive.has(loaded.checkpoint);
    let events = archived ? null : await this.deps.store.readEvents(runId);
    // From the archive; or its keys expired between the two reads: the archive has it by then.
    if (events === null || (events.length === 0 && this.archived))
      events = (await this.archivedEvents(tenantId, runId)) ?? events ?? [];
    return { ...loaded, events };
  }

  /** A (child) run's status; null when it does not exist (yet, or any more). */
  async statusOf(tenantId: string, runId: string): Promise<RunStatus | null> {
    const progress = await this.deps.store.progress(runId);
    if (progress === null && (await this.archived?.lastSeq(tenantId, runId)) != null) return 'done';
    return progress?.tenantId === tenantId ? progress.status : null;
  }

  /**
   * What a stream following a run tree needs of one of its runs: its status and last seq, or
   * 'absent' (not created yet, or gone), or 'hidden' (another tenant's: never to be followed).
   */
  async follow(tenantId: string, runId: string): Promise<RunFollowState> {
    const progress = await this.deps.store.progress(runId);
    if (progress === null) {
      const archived = await this.archived?.lastSeq(tenantId, runId);
      return archived == null ? 'absent' : { status: 'done', lastSeq: archived };
    }
    if (progress.tenantId !== tenantId) return 'hidden';
    return { status: progress.status, lastSeq: progress.lastSeq };
  }

  /** The run's webhook endpoints (never their secrets) and delivery log. */
  async webhooks(tenantId: string, runId: string): Promise<RunWebhooksResponse> {
    await this.lastSeq(tenantId, runId);
    return (await this.deps.webhooks?.view(runId)) ?? { runId, endpoints: [], deliveries: [] };
  }

  async listRuns(query: ListRunsQuery): Promise<RunPage> {
    return this.archived ? this.archived.listRuns(query) : this.deps.store.listRuns(query);
  }

  /**
   * The thread as a client that saw its last run's `run.finished` expects it: that run's
   * messages in, even when its worker has not released the thread yet (done right after the
   * final commit, so a read can come in between).
   */
  async thread(
    tenantId: string,
    threadId: string,
    at: ThreadPageAt = {
      before: null,
      limit: THREAD_PAGE_DEFAULT,
      maxBytes: THREAD_PAGE_MAX_BYTES,
    },
  ): Promise<ThreadPage> {
    await this.settleActiveRun(tenantId, threadId, '');
    const hot = await this.deps.threads.page(tenantId, threadId, at);
    return this.archived ? this.archived.thread(tenantId, threadId, hot, at) : hot;
  }
}
