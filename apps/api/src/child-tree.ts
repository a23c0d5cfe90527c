import { foldSnapshot } from '@baton/core';
import {
  MAX_CHILD_DEPTH,
  type AwaitedToolCall,
  type ChildRunView,
  type RunEvent,
  type RunSnapshot,
} from '@baton/protocol';
import { RunNotFoundError } from '@baton/runtime';
import type { ApiContext } from './context.ts';

/**
 * The API's view of run trees (agent-as-tool): a snapshot shows its child runs with their
 * status and, in `await`, the suspended calls of every descendant still working for it (tagged
 * with the run that holds them). Decisions sent to an ancestor are routed by
 * RunService.submitDecisions.
 */

/** Child links with status; another tenant's run has none (it cannot be a child). */
async function childViews(
  ctx: ApiContext,
  tenantId: string,
  snapshot: RunSnapshot,
): Promise<ChildRunView[]> {
  const views: ChildRunView[] = [];
  for (const link of snapshot.childRuns ?? []) {
    views.push({ ...link, status: await ctx.service.statusOf(tenantId, link.childRunId) });
  }
  return views;
}

/** A child's log; empty when it is gone (deleted, expired) since its status was read. */
async function childEvents(ctx: ApiContext, tenantId: string, runId: string): Promise<RunEvent[]> {
  try {
    return await ctx.service.events(tenantId, runId);
  } catch (error) {
    if (RunNotFoundError.isInstance(error)) return [];
    throw error;
  }
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
    const events = await childEvents(ctx, tenantId, child.childRunId);
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
