import { randomUUID } from 'node:crypto';
import {
  BatonError,
  RunDoneError,
  UnknownAgentError,
  runCommands,
  type Clock,
  type Transition,
} from '@baton/core';
import type {
  Checkpoint,
  CreateRunRequest,
  Decision,
  DecisionInput,
  RunEvent,
} from '@baton/protocol';
import { AgentCatalog, specOf } from './agent-registry.ts';
import { broadcastCancel } from './control-channel.ts';
import type { BatonQueues } from './queues.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { ListRunsQuery, RedisRunStore, RunPage } from './redis/redis-run-store.ts';
import type { RedisClient } from './redis/scripts.ts';
import type { RedisThreadStore, ThreadSnapshot } from './redis/thread-store.ts';
import { activeRunsKey, RunCommitter, type Loaded } from './run-committer.ts';

export interface RunServiceDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly committer: RunCommitter;
  readonly clock: Clock;
  readonly ids?: () => string;
}

export interface CreatedRun {
  readonly runId: string;
  readonly threadId: string;
  readonly turnId: string;
  readonly status: Checkpoint['status'];
  /** Set when the run waits behind the thread's active run (multitask 'enqueue' / 'interrupt'). */
  readonly queuedBehind?: string;
}

export class RunNotFoundError extends BatonError {
  constructor(runId: string) {
    super('run_not_found', `run ${runId} was not found`);
  }
}

/**
 * The control plane shared by the HTTP API and tests: create runs, accept decisions, cancel.
 * It needs no agent code: agent specs come from what workers advertise.
 */
export class RunService {
  readonly catalog: AgentCatalog;
  private readonly deps: RunServiceDeps;
  private readonly ids: () => string;

  constructor(deps: RunServiceDeps) {
    this.deps = deps;
    this.catalog = new AgentCatalog(deps.redis, deps.keys);
    this.ids = deps.ids ?? randomUUID;
  }

  async createRun(tenantId: string, request: CreateRunRequest): Promise<CreatedRun> {
    const { deps } = this;
    const descriptor = await this.catalog.get(request.agent);
    if (!descriptor)
      throw new UnknownAgentError(
        request.agent,
        (await this.catalog.list()).map((a) => a.name),
      );
    const runId = this.ids();
    const threadId = request.threadId ?? this.ids();
    const strategy = request.options?.multitask ?? 'reject';
    const acquired = await deps.threads.acquire(tenantId, threadId, runId, strategy);
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
      const thread = await deps.threads.load(tenantId, threadId);
      const turnId = `turn-${thread.runIds.length}`;
      const t = runCommands.create(
        specOf(descriptor),
        {
          identity: { runId, threadId, turnId, tenantId, agent: request.agent },
          input: request.input.messages,
          ...(request.options ? { options: request.options } : {}),
          history: acquired.kind === 'acquired' ? thread.messages : [],
          threadState: thread.state,
        },
        deps.clock.now(),
      );
      const created = await deps.store.create(t.checkpoint, t.events);
      await deps.redis.zadd(activeRunsKey(deps.keys), t.checkpoint.updatedAt, runId);
      if (acquired.kind === 'acquired') {
        await deps.queues.enqueueStep({ runId, tenantId }, 'start', created.version);
        return { runId, threadId, turnId, status: 'created' };
      }
      if (acquired.kind === 'interrupt') await this.cancel(tenantId, acquired.activeRunId);
      return { runId, threadId, turnId, status: 'created', queuedBehind: acquired.activeRunId };
    } catch (error) {
      await deps.threads.release(tenantId, threadId, runId, [], null).catch(() => undefined);
      throw error;
    }
  }

  async load(tenantId: string, runId: string): Promise<Loaded> {
    const stored = await this.deps.store.loadForTenant(runId, tenantId);
    if (!stored) throw new RunNotFoundError(runId);
    return stored;
  }

  /** Validates against the run's tickets and stores them durably; all or nothing. */
  async submitDecisions(
    tenantId: string,
    runId: string,
    inputs: readonly DecisionInput[],
  ): Promise<{ accepted: string[]; duplicates: string[]; status: Checkpoint['status'] }> {
    const decisions: Decision[] = inputs.map((d) => ({
      ...d,
      decisionId: d.decisionId ?? this.ids(),
    }));
    const loaded = await this.load(tenantId, runId);
    let result: { accepted: string[]; duplicates: string[] } = { accepted: [], duplicates: [] };
    const committed = await this.commitUnlessNoop(loaded, (cp) => {
      const t = runCommands.receiveDecisions(cp, decisions, this.deps.clock.now());
      result = { accepted: t.accepted.map((d) => d.decisionId), duplicates: t.duplicates };
      return t.accepted.length > 0 ? t : null;
    });
    if (committed)
      await this.deps.queues.enqueueStep({ runId, tenantId }, 'decision', committed.version);
    return { ...result, status: (committed ?? loaded).checkpoint.status };
  }

  /** Idempotent. A created run ends at once; a running or waiting one is told to stop everywhere. */
  async cancel(tenantId: string, runId: string): Promise<{ status: Checkpoint['status'] }> {
    const loaded = await this.load(tenantId, runId);
    if (loaded.checkpoint.status === 'done') return { status: 'done' };
    const committed = await this.commitUnlessNoop(loaded, (cp) =>
      cp.status === 'done' || cp.cancelRequested
        ? null
        : runCommands.requestCancel(cp, this.deps.clock.now()),
    );
    const current = committed ?? loaded;
    await broadcastCancel(this.deps.redis, this.deps.keys, runId);
    if (current.checkpoint.status !== 'done')
      await this.deps.queues.enqueueStep({ runId, tenantId }, 'cancel', current.version);
    return { status: current.checkpoint.status };
  }

  async events(tenantId: string, runId: string, afterSeq = 0): Promise<RunEvent[]> {
    await this.load(tenantId, runId);
    return this.deps.store.readEvents(runId, afterSeq);
  }

  async listRuns(query: ListRunsQuery): Promise<RunPage> {
    return this.deps.store.listRuns(query);
  }

  async thread(tenantId: string, threadId: string): Promise<ThreadSnapshot> {
    return this.deps.threads.load(tenantId, threadId);
  }

  private async commitUnlessNoop(
    loaded: Loaded,
    compute: (cp: Checkpoint) => Transition | null,
  ): Promise<Loaded | null> {
    let noop = false;
    const committed = await this.deps.committer
      .commit(loaded, (cp) => {
        if (cp.status === 'done') throw new RunDoneError(cp.identity.runId);
        const t = compute(cp);
        if (t === null) {
          noop = true;
          throw new NoopSignal();
        }
        return t;
      })
      .catch((error: unknown) => {
        if (error instanceof NoopSignal) return null;
        throw error;
      });
    return noop ? null : committed;
  }
}

class NoopSignal extends Error {}
