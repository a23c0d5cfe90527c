import { RunDoneError, activityOf, runCommands, type DeadlineExpiry } from '@baton/core';
import type { Checkpoint, Decision, DecisionInput, DecisionSource } from '@baton/protocol';

/** A decision as the runtime's own senders (waitpoints, events, timeouts) give it: with its source. */
export type SourcedDecisionInput = DecisionInput & { readonly source?: DecisionSource };
import { broadcastCancel } from './control-channel.ts';
import type { Loaded } from './run-committer.ts';
import {
  DecisionRouting,
  type RoutedDecisions,
  type SubmittedDecisions,
} from './decision-routing.ts';
import { RunNotFoundError } from './errors/run-not-found-error.ts';
import type { RunParts } from './run-service-deps.ts';

/** RunService's decisions and cancels: commands a client sends to a run that exists. */
export class RunDecisions {
  private readonly p: RunParts;
  /** Checkpoints this service read from the store (see submitDecisions' `current`). */
  private readonly issued = new WeakSet<Checkpoint>();

  constructor(parts: RunParts) {
    this.p = parts;
  }

  /** RunReads.load, remembered as read here (submitDecisions' `current`). */
  async load(tenantId: string, runId: string): Promise<Loaded> {
    const loaded = await this.p.reads.load(tenantId, runId);
    this.issued.add(loaded.checkpoint);
    return loaded;
  }

  /** Marks a run read by RunReads (loadWithEvents) as one submitDecisions may take as `current`. */
  issue<T extends Loaded>(loaded: T): T {
    this.issued.add(loaded.checkpoint);
    return loaded;
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
    inputs: readonly SourcedDecisionInput[],
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
    const routing = new DecisionRouting(this.p.deps.store, tenantId, root.checkpoint);
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
        this.p.deps.clock.now(),
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
    const progress = await this.p.deps.store.progress(runId);
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
      decisionId: d.decisionId ?? this.p.ids(),
    }));
    await routing.checkAncestors(loaded.checkpoint, decisions);
    let result: { accepted: string[]; duplicates: string[] } = { accepted: [], duplicates: [] };
    const committed = await this.p.deps.committer.commitCommand(loaded, (cp) => {
      const t = runCommands.receiveDecisions(cp, decisions, this.p.deps.clock.now());
      result = { accepted: t.accepted.map((d) => d.decisionId), duplicates: t.duplicates };
      return t.accepted.length > 0 ? t : null;
    });
    const { identity } = loaded.checkpoint;
    // Nothing committed: every decision was recorded already. This is a resend, possibly of a
    // request whose commit applied and whose scheduling (or reply) then failed: the run gets the
    // pass that commit owed it, as it stands now. A spare one is harmless (see resumeCreated).
    const owed = committed
      ? { activity: activityOf(committed.checkpoint), version: committed.version }
      : await this.p.deps.store.meta(identity.runId);
    await this.p.starts.afterDecision(identity, owed, committed !== null);
    await this.p.deps.durability.acknowledge();
    return { ...result, status: (committed ?? loaded).checkpoint.status };
  }

  /**
   * The deadline of a suspended call passed (a timer fired): applies its outcome through the same
   * commit as a client's decision (RunCommitter.commitCommand, a compare-and-set recomputed on a
   * conflict), so a decision and a deadline racing leave exactly one outcome. The deadline's
   * decision (deny, resume) then schedules the run as a client's does; a cancel outcome asks for
   * the run's cancel as POST …/cancel does. Idempotent: a second firing finds the call decided
   * ('moot'). A run gone (deleted, expired) is moot too.
   */
  async expireDeadline(
    tenantId: string,
    runId: string,
    toolCallId: string,
  ): Promise<DeadlineExpiry> {
    let loaded: Loaded;
    try {
      loaded = await this.load(tenantId, runId);
    } catch (error) {
      if (RunNotFoundError.isInstance(error)) return { kind: 'moot', why: 'the run is gone' };
      throw error;
    }
    let expiry = { kind: 'moot', why: 'nothing to do' } as DeadlineExpiry;
    const committed = await this.p.deps.committer
      .commitCommand(loaded, (cp) => {
        const t = runCommands.expireDeadline(cp, toolCallId, this.p.deps.clock.now());
        expiry = t.expiry;
        return t.expiry.kind === 'fired' ? t : null;
      })
      .catch((error: unknown) => {
        if (RunDoneError.isInstance(error)) return null;
        throw error;
      });
    if (committed === null)
      return expiry.kind === 'fired' ? { kind: 'moot', why: 'the run ended' } : expiry;
    const { identity } = committed.checkpoint;
    const outcome = expiry.kind === 'fired' ? expiry.outcome.action : null;
    if (outcome === 'cancel') {
      await broadcastCancel(this.p.deps.redis, this.p.deps.keys, runId);
      if (committed.checkpoint.status !== 'done')
        await this.p.deps.queues.enqueueStep(identity, 'cancel', committed.version);
    } else if (outcome === 'deny' || outcome === 'resume') {
      await this.p.starts.afterDecision(
        identity,
        { activity: activityOf(committed.checkpoint), version: committed.version },
        true,
      );
    }
    await this.p.deps.durability.acknowledge();
    return expiry;
  }

  /**
   * Idempotent. A created run ends at once; a running or waiting one records the request (an
   * event) and is told to stop everywhere; it ends Cancelled at its next phase boundary.
   */
  async cancel(tenantId: string, runId: string): Promise<{ status: Checkpoint['status'] }> {
    const loaded = await this.load(tenantId, runId);
    if (loaded.checkpoint.status === 'done') return { status: 'done' };
    const committed = await this.p.deps.committer
      .commitCommand(loaded, (cp) =>
        cp.status === 'done' || cp.cancelRequested
          ? null
          : runCommands.requestCancel(cp, this.p.deps.clock.now()),
      )
      .catch((error: unknown) => {
        if (RunDoneError.isInstance(error)) return null;
        throw error;
      });
    const current = committed ?? (await this.load(tenantId, runId));
    await broadcastCancel(this.p.deps.redis, this.p.deps.keys, runId);
    if (current.checkpoint.status !== 'done')
      await this.p.deps.queues.enqueueStep(current.checkpoint.identity, 'cancel', current.version);
    await this.p.deps.durability.acknowledge();
    return { status: current.checkpoint.status };
  }
}
