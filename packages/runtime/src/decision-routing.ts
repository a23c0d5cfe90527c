import { BatonError } from '@baton/core';
import {
  MAX_CHILD_DEPTH,
  type Checkpoint,
  type DecisionInput,
  type RunStatus,
} from '@baton/protocol';
import type { RedisRunStore } from './run-record/redis-run-store.ts';

/** What routing reads of a run: its checkpoint without the conversation. */
type Head = Omit<Checkpoint, 'messages'>;

/** Decisions routed to a descendant of the run they were sent to, and that run's answer. */
export interface RoutedDecisions {
  readonly runId: string;
  readonly accepted: string[];
  readonly duplicates: string[];
}

/** What a run's answer to a batch of decisions says (see RunService.submitDecisions). */
export interface SubmittedDecisions {
  readonly accepted: string[];
  readonly duplicates: string[];
  readonly status: RunStatus;
  /** Present when some decisions went to descendants (agent-as-tool): their answers, per run. */
  readonly routed?: RoutedDecisions[];
}

/** Unfinished children of a checkpoint's current round (the runs decisions may be routed to). */
function runningChildren(cp: Head): string[] {
  return cp.round.flatMap((id) => {
    const call = cp.calls[id];
    return call?.status === 'running' && call.child ? [call.child.runId] : [];
  });
}

/** Whether the run recorded the decision `decisionId` (any answer to its resend is its own). */
function recorded(cp: Head, decisionId: string | undefined): boolean {
  return decisionId !== undefined && cp.decisionLog.some((d) => d.decisionId === decisionId);
}

/**
 * One decision request's view of a run tree (agent-as-tool). Every run it looks at is read
 * without its messages, each at most once, and only runs of the request's tenant are ever seen
 * (another tenant's is absent): the conversation is read only by the run that takes decisions.
 */
export class DecisionRouting {
  private readonly store: RedisRunStore;
  private readonly tenantId: string;
  private readonly root: Head;
  private readonly heads = new Map<string, Head | null>();

  constructor(store: RedisRunStore, tenantId: string, root: Head) {
    this.store = store;
    this.tenantId = tenantId;
    this.root = root;
    this.heads.set(root.identity.runId, root);
  }

  private async head(runId: string): Promise<Head | null> {
    if (this.heads.has(runId)) return this.heads.get(runId) ?? null;
    const head = (await this.store.loadHeadForTenant(runId, this.tenantId))?.checkpoint ?? null;
    this.heads.set(runId, head);
    return head;
  }

  /**
   * Groups decisions by the run that holds their call: `runId` when given (the run itself or a
   * descendant), else the run itself when its own call with that id is suspended, else the
   * descendant whose call with that id is suspended (call ids are per run, so a parent's agent
   * call and its child's call may share one), else the descendant that recorded a decision of
   * that decisionId (a resend, once its call is no longer suspended, goes where its first attempt
   * went and gets its original answer), else the run itself (which answers as before).
   */
  async route(inputs: readonly DecisionInput[]): Promise<Map<string, DecisionInput[]>> {
    const rootId = this.root.identity.runId;
    const groups = new Map<string, DecisionInput[]>();
    for (const input of inputs) {
      const { runId: wanted, ...decision } = input;
      let target = rootId;
      if (wanted !== undefined && wanted !== rootId) {
        if (!(await this.descendsFrom(wanted, rootId)))
          throw new BatonError(
            'call_unknown',
            `run ${wanted} is not a child run of ${rootId}; send the decision to ${wanted} itself, or name a descendant of ${rootId}`,
            { runId: wanted, toolCallId: input.toolCallId },
          );
        target = wanted;
      } else if (
        wanted === undefined &&
        this.root.calls[input.toolCallId]?.status !== 'suspended'
      ) {
        const { toolCallId, decisionId } = input;
        target =
          (await this.findDescendant((h) => h.calls[toolCallId]?.status === 'suspended')) ??
          (recorded(this.root, decisionId)
            ? null
            : await this.findDescendant((h) => recorded(h, decisionId))) ??
          rootId;
      }
      groups.set(target, [...(groups.get(target) ?? []), decision]);
    }
    return groups;
  }

  /** Whether `runId` descends from `ancestorId` (walks identity.parent upwards). */
  private async descendsFrom(runId: string, ancestorId: string): Promise<boolean> {
    let current = runId;
    for (let depth = 0; depth <= MAX_CHILD_DEPTH; depth += 1) {
      const parent = (await this.head(current))?.identity.parent;
      if (!parent) return false;
      if (parent.runId === ancestorId) return true;
      current = parent.runId;
    }
    return false;
  }

  /** The unfinished descendant (breadth first) `match` holds for, if any. */
  private async findDescendant(match: (head: Head) => boolean): Promise<string | null> {
    let frontier = runningChildren(this.root);
    for (let depth = 1; depth <= MAX_CHILD_DEPTH && frontier.length > 0; depth += 1) {
      const next: string[] = [];
      for (const id of frontier) {
        const head = await this.head(id);
        if (!head) continue;
        if (match(head)) return id;
        next.push(...runningChildren(head));
      }
      frontier = next;
    }
    return null;
  }

  /**
   * A child run takes new decisions only while all its ancestors would: once one has finished or
   * its cancel was acknowledged, the child is about to be cancelled with it (a worker carries the
   * cancel down), and a 202 would name a decision nobody applies, which the log of the ancestor a
   * client asked through would never mention. Refused as the ancestor would refuse it. The
   * ancestors are read afresh (not from what routing saw): this check runs again right before
   * each commit.
   */
  async checkAncestors(
    cp: Head,
    decisions: readonly { readonly decisionId?: string | undefined }[],
  ): Promise<void> {
    if (!cp.identity.parent) return;
    // A resent decision keeps its original answer whatever happened since; only new ones count.
    const seen = new Set(cp.decisionLog.map((d) => d.decisionId));
    if (decisions.every((d) => d.decisionId !== undefined && seen.has(d.decisionId))) return;
    let current = cp.identity.runId;
    let parentId: string | undefined = cp.identity.parent.runId;
    for (let depth = 0; parentId !== undefined && depth <= MAX_CHILD_DEPTH; depth += 1) {
      const parent: Head | undefined = (await this.store.loadHeadForTenant(parentId, this.tenantId))
        ?.checkpoint;
      if (!parent) return;
      if (parent.status === 'done')
        throw new BatonError(
          'run_done',
          `run ${parentId} has already finished, and with it its child run ${current}; it accepts no more decisions`,
          { runId: parentId, childRunId: current },
        );
      if (parent.cancelRequested)
        throw new BatonError(
          'run_cancelled',
          `run ${parentId} is being cancelled, and its child run ${current} with it; it accepts no more decisions`,
          { runId: parentId, childRunId: current },
        );
      current = parentId;
      parentId = parent.identity.parent?.runId;
    }
  }
}
