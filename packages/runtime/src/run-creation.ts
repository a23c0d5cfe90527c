import { BatonError, UnknownAgentError, VersionConflictError, runCommands } from '@baton/core';
import type { Checkpoint, CreateRunRequest, CreatedRunWebhook, QueuedInfo } from '@baton/protocol';
import { specOf, type AgentCatalog } from './agent-registry.ts';
import { jsonBytes, type ThreadSnapshot } from './redis/thread-store.ts';
import { RunAlreadyReleasedError } from './errors/run-already-released-error.ts';
import { ThreadTooLargeError } from './errors/thread-too-large-error.ts';
import type { RunParts } from './run-service-deps.ts';

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
  /** The agent version it was created on (absent: its agent's workers predate versions). */
  readonly agentVersion?: string;
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

/** What a thread that nobody has written yet loads as. */
const EMPTY_THREAD: Pick<ThreadSnapshot, 'messages' | 'state' | 'runIds'> & {
  readonly reference?: undefined;
} = { messages: [], state: {}, runIds: [] };

/**
 * RunService's creates, and their resend rules: a create resent under the id of a run an
 * attempt of it created is answered with that run (from Redis, or from the archive once Redis
 * let it go), and what that attempt still owed the run is done then; never created twice.
 */
export class RunCreation {
  private readonly p: RunParts;
  private readonly catalog: AgentCatalog;
  /** RunDecisions.cancel ('interrupt' cancels the run a new one replaces). */
  private readonly cancel: (tenantId: string, runId: string) => Promise<unknown>;

  constructor(
    parts: RunParts,
    catalog: AgentCatalog,
    cancel: (tenantId: string, runId: string) => Promise<unknown>,
  ) {
    this.p = parts;
    this.catalog = catalog;
    this.cancel = cancel;
  }

  /** See CreateRunOptions for runs whose id derives from their trigger, and resends. */
  async createRun(
    tenantId: string,
    request: CreateRunRequest,
    opts: CreateRunOptions = {},
  ): Promise<CreatedRun> {
    const { deps } = this.p;
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
    // The version it runs on for good (pinned) or until its next step (auto-upgrade); none for
    // an agent whose workers predate versions (routed by agent).
    const agentVersion = await deps.queues.versions.current(request.agent);
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
    const runId = opts.runId ?? this.p.ids();
    const threadId = request.threadId ?? opts.threadId ?? this.p.ids();
    const strategy = request.options?.multitask ?? 'reject';
    if (request.threadId !== undefined) await this.settleActiveRun(tenantId, threadId, runId);
    // One time for the run's createdAt and its thread index score: the thread's run list and
    // the tenant's show the same createdAt (and the archive's lists, which read the run's).
    const createdAt = deps.clock.now();
    const index = deps.store.index;
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
          : await this.p.reads.cold.threadForRun(tenantId, threadId);
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
            ...(agentVersion === null ? {} : { agentVersion }),
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
      // In progress on its version (one queued behind its thread's run too) until it finishes.
      await deps.queues.versions.track(t.checkpoint.identity, 'created');
      if (acquired.kind === 'acquired') {
        const queued = await this.p.starts.start(t.checkpoint.identity, 'start', created.version);
        await deps.durability.acknowledge();
        return {
          runId,
          threadId,
          turnId,
          status: 'created',
          ...webhook,
          ...(queued ? { queued } : {}),
          ...(agentVersion === null ? {} : { agentVersion }),
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
        ...(agentVersion === null ? {} : { agentVersion }),
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
    const { deps } = this.p;
    const stored = await deps.store.loadHeadForTenant(runId, tenantId);
    if (!stored) return null;
    const { checkpoint: cp } = stored;
    const { threadId, turnId } = cp.identity;
    // What the create writes after the run's own (its listing, its fairness fields): the first
    // attempt may have failed before any of it. Its thread index was written by its acquire.
    await deps.store.completeCreate(cp, true);
    const webhook = await deps.webhooks?.createdWebhook(runId, request.webhook);
    const answer = {
      runId,
      threadId,
      turnId,
      status: cp.status,
      ...(webhook ? { webhook } : {}),
      ...(cp.identity.agentVersion === undefined ? {} : { agentVersion: cp.identity.agentVersion }),
    };
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
      meta?.activity === 'active'
        ? await this.p.starts.start(cp.identity, 'start', meta.version)
        : null;
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
    const gone = await this.p.reads.cold.gone(tenantId, runId).catch(() => null);
    if (gone === null) return null;
    if (gone === 'deleted') throw spentKey(runId, 'was deleted');
    const { threadId, turnId } = gone.checkpoint.identity;
    const webhook = await this.p.deps.webhooks?.createdWebhook(runId, request.webhook);
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
    const promoted = await this.p.deps.threads.abandon(tenantId, threadId, runId);
    if (promoted === null) return;
    const next = await this.p.deps.store.load(promoted);
    if (!next) return;
    await this.p.deps.store.index.move('active', promoted, this.p.deps.clock.now());
    await this.p.starts.start(next.checkpoint.identity, 'start', next.version);
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

  /**
   * A run that finished releases its thread right after its final commit; a client that saw
   * run.finished and starts the next turn at once must not find the thread still held by it, nor
   * by a run whose keys are gone. Both are released here first (release is idempotent).
   */
  async settleActiveRun(tenantId: string, threadId: string, runId: string): Promise<void> {
    const { deps } = this.p;
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
}
