import { BatonError, foldSnapshot, runCommands } from '@baton/core';
import {
  MAX_CHILD_DEPTH,
  type AwaitedToolCall,
  type Checkpoint,
  type ChildRunView,
  type Decision,
  type DecisionInput,
  type RunSnapshot,
} from '@baton/protocol';
import type { ApiContext } from './context.ts';

/**
 * The API's view of run trees (agent-as-tool): a snapshot shows its child runs with their
 * status and, in `await`, the suspended calls of every descendant still working for it (tagged
 * with the run that holds them); decisions sent to an ancestor are routed to that run.
 */

/** Child links with status; other tenants' runs are never read (they cannot be children). */
async function childViews(
  ctx: ApiContext,
  tenantId: string,
  snapshot: RunSnapshot,
): Promise<ChildRunView[]> {
  const views: ChildRunView[] = [];
  for (const link of snapshot.childRuns ?? []) {
    const meta = await ctx.runtime.store.meta(link.childRunId);
    views.push({ ...link, status: meta && meta.tenantId === tenantId ? meta.status : null });
  }
  return views;
}

/** Suspended calls of the descendants whose parent call still waits for them. */
async function descendantAwaits(
  ctx: ApiContext,
  tenantId: string,
  snapshot: RunSnapshot,
  children: readonly ChildRunView[],
  depth: number,
): Promise<AwaitedToolCall[]> {
  if (depth > MAX_CHILD_DEPTH) return [];
  const out: AwaitedToolCall[] = [];
  for (const child of children) {
    const call = snapshot.toolCalls.find((c) => c.toolCallId === child.toolCallId);
    if (call?.status !== 'running' || call.attempt !== child.attempt) continue;
    if (child.status !== 'running' && child.status !== 'waiting') continue;
    const events = await ctx.runtime.store.readEvents(child.childRunId);
    if (events.length === 0) continue;
    const sub = foldSnapshot(events);
    for (const awaited of sub.await?.calls ?? [])
      out.push({ ...awaited, runId: awaited.runId ?? child.childRunId });
    const grand = await childViews(ctx, tenantId, sub);
    for (const awaited of await descendantAwaits(ctx, tenantId, sub, grand, depth + 1))
      out.push(awaited);
  }
  return out;
}

/** What GET /v1/runs/:id adds for a run with child runs: their status, their awaited calls. */
export async function runTreeView(
  ctx: ApiContext,
  tenantId: string,
  snapshot: RunSnapshot,
): Promise<Pick<RunSnapshot, 'await'> & { childRuns?: ChildRunView[] }> {
  if (!snapshot.childRuns?.length) return { await: snapshot.await };
  const childRuns = await childViews(ctx, tenantId, snapshot);
  const nested = await descendantAwaits(ctx, tenantId, snapshot, childRuns, 1);
  const calls = [...(snapshot.await?.calls ?? []), ...nested];
  return { childRuns, await: calls.length > 0 ? { kind: 'tool_calls', calls } : null };
}

/** Unfinished children of a checkpoint's current round (the runs decisions may be routed to). */
function runningChildren(cp: Checkpoint): string[] {
  return cp.round.flatMap((id) => {
    const call = cp.calls[id];
    return call?.status === 'running' && call.child ? [call.child.runId] : [];
  });
}

/** Whether `runId` descends from `ancestorId` (walks identity.parent upwards). */
async function descendsFrom(
  ctx: ApiContext,
  tenantId: string,
  runId: string,
  ancestorId: string,
): Promise<boolean> {
  let current = runId;
  for (let depth = 0; depth <= MAX_CHILD_DEPTH; depth += 1) {
    const loaded = await ctx.runtime.store.loadForTenant(current, tenantId);
    const parent = loaded?.checkpoint.identity.parent;
    if (!parent) return false;
    if (parent.runId === ancestorId) return true;
    current = parent.runId;
  }
  return false;
}

/** The descendant (breadth first) whose call `toolCallId` is suspended, if any. */
async function findSuspendedCall(
  ctx: ApiContext,
  tenantId: string,
  root: Checkpoint,
  toolCallId: string,
): Promise<string | null> {
  let frontier = runningChildren(root);
  for (let depth = 1; depth <= MAX_CHILD_DEPTH && frontier.length > 0; depth += 1) {
    const next: string[] = [];
    for (const id of frontier) {
      const loaded = await ctx.runtime.store.loadForTenant(id, tenantId);
      if (!loaded) continue;
      if (loaded.checkpoint.calls[toolCallId]?.status === 'suspended') return id;
      next.push(...runningChildren(loaded.checkpoint));
    }
    frontier = next;
  }
  return null;
}

/**
 * Groups decisions by the run that holds their call: `runId` when given (the run itself or a
 * descendant), else the run itself when its own call with that id is suspended, else the
 * descendant whose call with that id is suspended (call ids are per run, so a parent's agent
 * call and its child's call may share one), else the run itself (which answers as before).
 */
export async function routeDecisions(
  ctx: ApiContext,
  tenantId: string,
  root: Checkpoint,
  inputs: readonly DecisionInput[],
): Promise<Map<string, DecisionInput[]>> {
  const rootId = root.identity.runId;
  const groups = new Map<string, DecisionInput[]>();
  for (const input of inputs) {
    const { runId: wanted, ...decision } = input;
    let target = rootId;
    if (wanted !== undefined && wanted !== rootId) {
      if (!(await descendsFrom(ctx, tenantId, wanted, rootId)))
        throw new BatonError(
          'call_unknown',
          `run ${wanted} is not a child run of ${rootId}; send the decision to ${wanted} itself, or name a descendant of ${rootId}`,
          { runId: wanted, toolCallId: input.toolCallId },
        );
      target = wanted;
    } else if (wanted === undefined && root.calls[input.toolCallId]?.status !== 'suspended') {
      target = (await findSuspendedCall(ctx, tenantId, root, input.toolCallId)) ?? rootId;
    }
    groups.set(target, [...(groups.get(target) ?? []), decision]);
  }
  return groups;
}

/**
 * Checks every group against its run and the runs above it (RunService.checkAncestors) before any
 * is stored, so a request that would be refused for one run changes no run (the typed error of the
 * first refusal is thrown). Runs can still change between this check and the commits; each
 * run's commit is all-or-nothing on its own, and a child cancelled after it accepted a decision
 * records that decision as discarded in its own log.
 */
export async function precheckDecisions(
  ctx: ApiContext,
  tenantId: string,
  groups: ReadonlyMap<string, readonly DecisionInput[]>,
): Promise<void> {
  for (const [runId, inputs] of groups) {
    const loaded = await ctx.service.load(tenantId, runId);
    await ctx.service.checkAncestors(tenantId, loaded.checkpoint, inputs);
    const decisions: Decision[] = inputs.map((d, i) => ({
      ...d,
      decisionId: d.decisionId ?? `precheck-${String(i)}`,
    }));
    runCommands.receiveDecisions(loaded.checkpoint, decisions, Date.now());
  }
}
