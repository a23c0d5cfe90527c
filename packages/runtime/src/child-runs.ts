import {
  RunDoneError,
  UnknownAgentError,
  VersionConflictError,
  childParentOf,
  childRunResult,
  childStartFailure,
  linkedChildRuns,
  plan,
  runCommands,
  type Clock,
  type RunArchive,
} from '@baton/core';
import type { Checkpoint, ToolCallState, ToolExecutionResult } from '@baton/protocol';
import type { Logger } from 'pino';
import { AgentCatalog, specOf } from './agent-registry.ts';
import { broadcastCancel } from './control-channel.ts';
import type { BatonQueues } from './queues.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisRunStore } from './run-record/redis-run-store.ts';
import type { RedisClient } from './redis/scripts.ts';
import type { RedisThreadStore } from './redis/thread-store.ts';
import type { RunCommitter } from './run-committer.ts';
import { ToolResultMailbox } from './run-record/tool-result-mailbox.ts';

export interface ChildRunsDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  /** A getter: the committer calls back into this class when a run finishes. */
  readonly committer: () => RunCommitter;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Seconds a result delivered to a parent that has finished (or is gone) is kept. */
  readonly resultTtlSeconds: number;
  /**
   * ARCHIVE_URL's archive (a getter: built after this class), where a child that finished lives
   * on once Redis let it go: asked before a child is created again.
   */
  readonly archive?: () => RunArchive | null;
}

/** What starting a call's child run came to. */
export type ChildStart =
  | { readonly kind: 'created' | 'exists' }
  /** It cannot start (unknown agent, id taken): this is the call's result. */
  | { readonly kind: 'failed'; readonly result: ToolExecutionResult }
  /** It ran and ended already (only the archive still has it): this is the call's result. */
  | { readonly kind: 'finished'; readonly result: ToolExecutionResult };

/**
 * Agent-as-tool, the Redis half: creates a parent call's child run, delivers a finished child's
 * result into its parent's tool-result mailbox and wakes the parent, and cancels the children of
 * a run that ended. Every operation is idempotent, keyed by the deterministic child run id
 * (parent run, call position, attempt), so a redelivered job, a re-run step or the reconciler
 * may repeat any of them.
 */
export class ChildRuns {
  private readonly deps: ChildRunsDeps;
  private readonly catalog: AgentCatalog;
  private readonly mailbox: ToolResultMailbox;
  /** Test hook (the worker's probes): crash tests stop a process at an exact point. */
  probe?: (point: string, info: Record<string, unknown>) => void | Promise<void>;

  constructor(deps: ChildRunsDeps) {
    this.deps = deps;
    this.catalog = new AgentCatalog(deps.redis, deps.keys);
    this.mailbox = new ToolResultMailbox(deps.redis, deps.keys, deps.resultTtlSeconds);
  }

  /**
   * Creates the child run of a Running agent-tool call unless it exists: the same steps as
   * POST /v1/runs (index, create, first step job), with the link's id and thread. Run by the
   * parent's lease holder; a parent that ended meanwhile gets the child cancelled at once.
   * `fresh`: the commit just before this call started the call, so no child can exist yet and
   * the archive is not asked (it cannot have a run that never existed).
   */
  async start(parent: Checkpoint, call: ToolCallState, fresh = false): Promise<ChildStart> {
    const { deps } = this;
    const ref = call.child;
    if (!ref)
      throw new Error(`call ${call.id} of run ${parent.identity.runId} is not an agent call`);
    const now = deps.clock.now();
    const origin = childParentOf(parent, call);
    const ours = (cp: Checkpoint): boolean => {
      const p = cp.identity.parent;
      return (
        cp.identity.tenantId === parent.identity.tenantId &&
        p?.runId === origin.runId &&
        p.toolCallId === origin.toolCallId &&
        p.attempt === origin.attempt
      );
    };
    const existing = await deps.store.load(ref.runId);
    // A child that finished and was archived is gone from Redis after the retention while its
    // parent may still have to apply its result (its delivery was lost): created again under
    // the same id it would run a second time, and reads of the id would flip between copies.
    const archived = existing || fresh ? null : await this.archived(parent, ref.runId);
    const taken = (): ChildStart => ({
      kind: 'failed',
      result: childStartFailure(call, 'child_run_conflict', `run id ${ref.runId} is taken`, now),
    });
    if (archived) {
      if (!ours(archived)) return taken();
      const result = childRunResult(archived);
      // The archive holds finished runs only: never a reason to create the child again.
      return result ? { kind: 'finished', result } : { kind: 'exists' };
    }
    if (existing) {
      if (!ours(existing.checkpoint)) return taken();
      // Created but its first job lost (a crash between create and enqueue): enqueue it again.
      if (existing.checkpoint.status === 'created')
        await deps.queues.enqueueStep(existing.checkpoint.identity, 'start', existing.version);
      return { kind: 'exists' };
    }
    const descriptor = await this.catalog.get(ref.agent);
    if (!descriptor) {
      const known = await this.catalog.names();
      const error = new UnknownAgentError(ref.agent, known);
      return { kind: 'failed', result: childStartFailure(call, error.code, error.message, now) };
    }
    const { tenantId } = parent.identity;
    if (ref.thread === 'new') {
      const acquired = await deps.threads.acquire(tenantId, ref.threadId, ref.runId, 'reject');
      // (a thread of its own is new: 'too_large' would mean it is not, like 'busy')
      if (acquired.kind !== 'acquired')
        return {
          kind: 'failed',
          result: childStartFailure(
            call,
            'child_run_conflict',
            `thread ${ref.threadId} is in use`,
            now,
          ),
        };
    }
    // Inherit: the child reads the session's history but never holds the thread (its parent
    // does), so it neither queues behind its parent nor writes the thread when it ends.
    const thread = await deps.threads.loadForRun(tenantId, ref.threadId);
    // The child agent's current version (its own pin: a parent's version says nothing of it).
    const agentVersion = await deps.queues.versions.current(ref.agent);
    const t = runCommands.create(
      specOf(descriptor),
      {
        identity: {
          runId: ref.runId,
          threadId: ref.threadId,
          // A thread of its own: its first run, as every thread's first run is (turn-1).
          turnId: ref.thread === 'inherit' ? parent.identity.turnId : 'turn-1',
          tenantId,
          agent: ref.agent,
          parent: origin,
          // A child is as urgent as its parent and counts for the same caller.
          ...(parent.identity.priority === undefined ? {} : { priority: parent.identity.priority }),
          ...(parent.identity.fairnessKey === undefined
            ? {}
            : { fairnessKey: parent.identity.fairnessKey }),
          ...(agentVersion === null ? {} : { agentVersion }),
        },
        input: [{ role: 'user', content: ref.input }],
        history: thread.messages,
        threadState: thread.state,
      },
      now,
    );
    // Listed before it exists (run-index.ts): a crash after the create cannot hide it.
    await deps.store.index.add('active', ref.runId, now);
    let version: number;
    try {
      version = (await deps.store.create(t.checkpoint, t.events, { history: thread.reference }))
        .version;
    } catch (error) {
      // Another process created it first (a redelivered job racing the original).
      if (VersionConflictError.isInstance(error)) return { kind: 'exists' };
      throw error;
    }
    await deps.queues.versions.track(t.checkpoint.identity, 'created');
    await deps.queues.enqueueStep(t.checkpoint.identity, 'start', version);
    deps.logger.debug({ runId: parent.identity.runId, child: ref.runId }, 'child run created');
    // The parent's end cancels its children (onFinished); one that ended before this child
    // existed could not see it, so the creator looks after creating.
    const parentMeta = await deps.store.meta(parent.identity.runId);
    if (!parentMeta || parentMeta.status === 'done') await this.cancel(ref.runId);
    return { kind: 'created' };
  }

  /** The finished child of this id in the archive (null without an archive, or none there). */
  private async archived(parent: Checkpoint, runId: string): Promise<Checkpoint | null> {
    const archive = this.deps.archive?.();
    if (!archive) return null;
    return (await archive.loadRun(parent.identity.tenantId, runId))?.checkpoint ?? null;
  }

  /**
   * A child that ended delivers its result to its parent's call: recorded first-writer-wins in
   * the parent's mailbox (the same one tool jobs use), then a pass over the parent is scheduled,
   * which applies it under the parent's lease. The result is a function of the child's final
   * checkpoint, so any number of deliveries record the same thing once.
   */
  async deliver(child: Checkpoint): Promise<boolean> {
    const { deps } = this;
    const result = childRunResult(child);
    const parentId = child.identity.parent?.runId;
    if (!result || !parentId) return false;
    const parent = await deps.store.meta(parentId);
    if (!parent || parent.status === 'done') return false;
    // The mailbox's one first-writer-wins script (run-record), as tool jobs record theirs.
    await this.mailbox.record(parentId, result);
    // unique: a pass at this version may be running and have looked at the mailbox already.
    await deps.queues.enqueueStep(
      {
        runId: parentId,
        tenantId: parent.tenantId,
        agent: parent.agent,
        priority: parent.priority,
      },
      'continue',
      parent.version,
      true,
    );
    return true;
  }

  /** Cancels every unfinished child a run's current round started (idempotent). */
  async cancelChildren(parent: Checkpoint): Promise<void> {
    for (const ref of linkedChildRuns(parent)) {
      const meta = await this.deps.store.meta(ref.runId);
      if (meta && meta.status !== 'done') await this.cancel(ref.runId);
    }
  }

  /** POST /v1/runs/:id/cancel for a child: durable request, broadcast, a pass to honor it. */
  async cancel(runId: string): Promise<void> {
    const { deps } = this;
    const loaded = await deps.store.load(runId);
    if (!loaded || loaded.checkpoint.status === 'done') return;
    let current = loaded;
    if (!loaded.checkpoint.cancelRequested) {
      try {
        const committed = await deps
          .committer()
          .commitCommand(loaded, (cp) =>
            cp.status === 'done' ? null : runCommands.requestCancel(cp, deps.clock.now()),
          );
        // Null: the child finished meanwhile, and a finished run owes its tree nothing more.
        if (committed === null) return;
        current = committed;
      } catch (error) {
        // The store's own refusal: the run finished between the load and the write.
        if (RunDoneError.isInstance(error)) return;
        throw error;
      }
    }
    await broadcastCancel(deps.redis, deps.keys, runId);
    if (current.checkpoint.status !== 'done')
      await deps.queues.enqueueStep(current.checkpoint.identity, 'cancel', current.version);
  }

  /** What a finished run owes its tree: its result to its parent, an end to its children. */
  async onFinished(cp: Checkpoint): Promise<void> {
    if (cp.identity.parent) {
      await this.probe?.('before-child-deliver', {
        runId: cp.identity.runId,
        parentRunId: cp.identity.parent.runId,
      });
      await this.deliver(cp);
    }
    await this.cancelChildren(cp);
  }

  /**
   * For the reconciler: whether the running agent calls of `parent` are driven by their child
   * runs (each exists and has not ended). A child that ended is delivered here (its own
   * clean-up may have died with its worker); a missing one is not driving anything. Children
   * drive their parent only while its next move is to wait for its calls: a parent that must
   * cancel, resume or finish its step needs a pass of its own, which no child schedules (a child
   * waiting for a decision may never end, and a cancel must end the tree without it).
   */
  async drive(parent: Checkpoint): Promise<boolean> {
    if (plan(parent).kind !== 'execute') return false;
    let driven = false;
    for (const id of parent.round) {
      const ref = parent.calls[id]?.status === 'running' ? parent.calls[id]?.child : undefined;
      if (!ref) continue;
      const child =
        (await this.deps.store.load(ref.runId))?.checkpoint ??
        (await this.archived(parent, ref.runId));
      if (!child) return false;
      if (child.status === 'done') await this.deliver(child);
      driven = true;
    }
    return driven;
  }
}
