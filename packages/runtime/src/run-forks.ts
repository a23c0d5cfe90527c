import {
  activityOf,
  firstForkSeq,
  forkCheckpoint,
  UnknownAgentError,
  type ForkResult,
} from '@baton/core';
import {
  BatonError,
  type Checkpoint,
  type ForkRunRequest,
  type ForkRunResponse as ForkRunResponseWithLinks,
  type RunEvent,
  type RunOrigin,
} from '@baton/protocol';
import { specOf, type AgentCatalog } from './agent-registry.ts';
import { UnknownAgentVersionError } from './errors/agent-version-errors.ts';
import type { RunParts } from './run-service-deps.ts';

/** What a fork answers; the API adds the new run's links. */
export type ForkedRun = Omit<ForkRunResponseWithLinks, 'links'>;

/** The terminations a replay reruns: a run that failed or was cancelled. */
const REPLAYABLE = new Set(['error', 'cancelled']);

/** Events of a run's end, or of an inference it never committed: not part of its progress. */
function isEndingOrUncommitted(e: RunEvent): boolean {
  switch (e.type) {
    case 'run.finished':
      return e.status === 'done';
    case 'run.status':
      return e.to === 'done';
    case 'decision.discarded':
    case 'text.delta':
    case 'reasoning.delta':
    case 'inference.reset':
    case 'model.retry':
      return true;
    case 'tool_call.result':
      return e.outcome.status === 'cancelled' && (e.outcome.error ?? '').startsWith('run ended');
    case 'tool_call.status':
      return e.to === 'cancelled';
    default:
      return false;
  }
}

/**
 * The seq a replay starts after: the original's last committed progress before its cancel
 * request or its failure (every tool result, decision and step it committed is kept; what was
 * unfinished runs again), never before the end of its start. Null: the run never started.
 */
export function replayPoint(events: readonly RunEvent[]): number | null {
  const min = firstForkSeq(events);
  if (min === null) return null;
  const cancel = events.findIndex((e) => e.type === 'run.cancel_requested');
  let i = (cancel === -1 ? events.length : cancel) - 1;
  while (i >= 0 && isEndingOrUncommitted(events[i]!)) i -= 1;
  return Math.max(min, events[i]?.seq ?? min);
}

function refusal(result: Exclude<ForkResult, { kind: 'forked' }>, atSeq: number): BatonError {
  switch (result.kind) {
    case 'seq_out_of_range':
      return new BatonError(
        'fork_point_invalid',
        result.max < result.min
          ? `the run has no event a fork can start after yet (it has not started)`
          : `atSeq ${String(atSeq)} is outside the run's log: a fork starts after a seq from ${String(result.min)} (the end of the run's start) to ${String(result.max)} (its last event)`,
        { atSeq, min: result.min, max: result.max },
      );
    case 'input_refused':
    case 'input_required':
      return new BatonError('fork_point_invalid', result.message, { atSeq });
  }
}

/**
 * Fork and replay (docs/ARCHITECTURE.md "Fork and replay"): a new run, on a new thread branch,
 * whose checkpoint is the original's folded up to a seq (forkCheckpoint) and whose log opens
 * with the original's events up to there. The original is read only, never written.
 */
export class RunForks {
  private readonly p: RunParts;
  private readonly catalog: AgentCatalog;

  constructor(parts: RunParts, catalog: AgentCatalog) {
    this.p = parts;
    this.catalog = catalog;
  }

  /** POST /v1/runs/:id/fork. Another tenant's run is RunNotFoundError (404). */
  async fork(tenantId: string, runId: string, request: ForkRunRequest): Promise<ForkedRun> {
    const loaded = await this.p.reads.loadWithEvents(tenantId, runId);
    return this.forkLoaded(loaded.checkpoint, loaded.events, request, 'fork');
  }

  /**
   * POST /v1/runs/:id/replay: a failed or cancelled run again, as a new run from its last
   * committed step (replayPoint); 409 run_not_replayable for any other run.
   */
  async replay(
    tenantId: string,
    runId: string,
    ids?: { readonly runId: string; readonly threadId: string },
  ): Promise<ForkedRun> {
    const loaded = await this.p.reads.loadWithEvents(tenantId, runId);
    const cp = loaded.checkpoint;
    if (cp.status !== 'done' || !REPLAYABLE.has(cp.termination?.kind ?? ''))
      throw new BatonError(
        'run_not_replayable',
        `run ${runId} is ${cp.status === 'done' ? `done (${cp.termination?.kind ?? 'unknown'})` : cp.status}: only a failed or cancelled run can be replayed; fork it at a seq instead`,
        { runId, status: cp.status, termination: cp.termination?.kind ?? null },
      );
    const atSeq = replayPoint(loaded.events);
    if (atSeq === null)
      throw new BatonError(
        'run_not_replayable',
        `run ${runId} never started: create it again instead`,
        { runId },
      );
    return this.forkLoaded(cp, loaded.events, { atSeq }, 'replay', ids);
  }

  private async forkLoaded(
    original: Checkpoint,
    events: readonly RunEvent[],
    request: ForkRunRequest,
    kind: RunOrigin['kind'],
    /** Ids derived by the caller (a bulk replay): a second attempt answers the first's run. */
    derived?: { readonly runId: string; readonly threadId: string },
  ): Promise<ForkedRun> {
    const { deps } = this.p;
    const { tenantId, agent } = original.identity;
    const descriptor = await this.catalog.advert(agent);
    if (!descriptor)
      throw new UnknownAgentError(
        agent,
        (await this.catalog.list()).map((a) => a.name),
      );
    deps.queues.taskQueues.learn(agent, descriptor.taskQueue);
    const runId = derived?.runId ?? this.p.ids();
    const threadId = derived?.threadId ?? this.p.ids();
    if (derived) {
      const existing = await deps.store.loadHeadForTenant(runId, tenantId);
      if (existing?.checkpoint.origin)
        return {
          runId,
          threadId: existing.checkpoint.identity.threadId,
          turnId: existing.checkpoint.identity.turnId,
          status: existing.checkpoint.status,
          origin: existing.checkpoint.origin,
        };
    }
    // The version the caller names (it must be one a worker advertised), else the agent's
    // current one: the fork is pinned to it like any new run (none for unversioned workers).
    const agentVersion = request.agentVersion ?? (await deps.queues.versions.current(agent));
    if (request.agentVersion !== undefined) {
      const known = await deps.queues.versions.versionsOf(agent, true);
      if (!known.some((v) => v.version === request.agentVersion))
        throw new UnknownAgentVersionError(
          agent,
          request.agentVersion,
          known.map((v) => v.version),
        );
    }
    const identity = {
      runId,
      threadId,
      turnId: 'turn-1',
      tenantId,
      agent,
      ...(agentVersion === null ? {} : { agentVersion }),
      ...(original.identity.priority === undefined ? {} : { priority: original.identity.priority }),
      ...(original.identity.fairnessKey === undefined
        ? {}
        : { fairnessKey: original.identity.fairnessKey }),
    };
    const input = request.input?.messages ?? [];
    const result = forkCheckpoint(
      specOf(descriptor),
      { checkpoint: original, events },
      { atSeq: request.atSeq, identity, input },
    );
    if (result.kind !== 'forked') throw refusal(result, request.atSeq);
    const origin: RunOrigin = {
      kind,
      runId: original.identity.runId,
      threadId: original.identity.threadId,
      atSeq: request.atSeq,
      ...(request.agentVersion === undefined ? {} : { agentVersion: request.agentVersion }),
    };
    const createdAt = deps.clock.now();
    const checkpoint: Checkpoint = {
      ...result.checkpoint,
      createdAt,
      updatedAt: createdAt,
      origin,
    };
    const history = checkpoint.messages.slice(0, checkpoint.historyLength);
    // The branch: a new thread that starts with the history the original started from; the
    // fork's own messages (the original's up to atSeq, then its own) follow at its release.
    if (history.length > 0) await deps.threads.seed(tenantId, threadId, history, {});
    const live = activityOf(checkpoint) === 'active' ? 'active' : 'waiting';
    await deps.store.index.add(live, runId, createdAt);
    const acquired = await deps.threads.acquire(tenantId, threadId, runId, 'reject', createdAt, []);
    if (acquired.kind !== 'acquired')
      throw new BatonError('conflict', `the fork's new thread ${threadId} was not free`, {
        threadId,
      });
    // The tenant's webhooks hear of forks as of any run (the original's own webhook is its own).
    const hooks = await deps.webhooks?.endpointsFor(tenantId, undefined);
    await deps.webhooks?.register(runId, tenantId, hooks?.endpoints ?? [], checkpoint.metadata);
    const thread = history.length > 0 ? await deps.threads.loadForRun(tenantId, threadId) : null;
    const created = await deps.store.create(checkpoint, result.events, {
      threadIndexed: true,
      history: thread?.reference,
    });
    await deps.queues.versions.track(identity, live === 'active' ? 'created' : 'waiting');
    if (live === 'active') await this.p.starts.start(identity, 'start', created.version);
    await deps.durability.acknowledge();
    return { runId, threadId, turnId: identity.turnId, status: checkpoint.status, origin };
  }
}
