import {
  MAX_CHILD_DEPTH,
  childRunIdFor,
  type Checkpoint,
  type ChildRunRef,
  type JsonObject,
  type RunParent,
  type ToolCallState,
  type ToolExecutionResult,
  type ToolResult,
} from '@baton/protocol';
import { agentToolPrompt, type AgentToolSpec } from '../tools.ts';
import type { Draft } from './draft.ts';

/**
 * Agent-as-tool, the pure half. When an agent tool's call is allowed to execute, the call
 * becomes Running and records the child run its execution is (`call.child`) with a
 * `child_run.linked` event, in the same commit: the link is written before the child exists, so
 * whichever process continues the run knows which child to create (idempotently, its id is
 * derived from the call) or to wait for. The child's end becomes the call's result through
 * `childRunResult`, a function of the child's final checkpoint alone, so delivering it twice
 * delivers the same thing.
 */

/** Error result when the tree would grow deeper than MAX_CHILD_DEPTH; null when it may start. */
export function childDepthError(cp: Checkpoint, toolName: string): ToolResult | null {
  const depth = (cp.identity.parent?.depth ?? 0) + 1;
  if (depth <= MAX_CHILD_DEPTH) return null;
  return {
    kind: 'error',
    code: 'child_depth_exceeded',
    message: `agent tool ${toolName} would start a run nested ${String(depth)} levels deep; at most ${String(MAX_CHILD_DEPTH)} are allowed`,
  };
}

/** Records the child run a Running agent-tool call executes as (checkpoint + event). */
export function linkChildRun(
  draft: Draft,
  call: ToolCallState,
  spec: AgentToolSpec,
  args: JsonObject,
): void {
  const { identity } = draft.cp;
  const runId = childRunIdFor(identity.runId, call);
  const thread = spec.thread ?? 'inherit';
  const ref: ChildRunRef = {
    runId,
    agent: spec.agent,
    threadId: thread === 'inherit' ? identity.threadId : runId,
    thread,
    input: agentToolPrompt(spec, args),
  };
  call.child = ref;
  draft.emit({
    type: 'child_run.linked',
    link: {
      toolName: call.name,
      toolCallId: call.id,
      childRunId: runId,
      childAgentId: spec.agent,
      threadId: ref.threadId,
      attempt: call.attempt,
    },
  });
}

/** The identity.parent of the child run a parent's call starts. */
export function childParentOf(parent: Checkpoint, call: ToolCallState): RunParent {
  const origin = parent.identity.parent;
  return {
    runId: parent.identity.runId,
    toolCallId: call.id,
    toolName: call.name,
    agent: parent.identity.agent,
    attempt: call.attempt,
    rootRunId: origin?.rootRunId ?? parent.identity.runId,
    depth: (origin?.depth ?? 0) + 1,
  };
}

/** The calls of a checkpoint's round whose execution is a child run that has not ended yet. */
export function runningChildCalls(cp: Checkpoint): ToolCallState[] {
  return cp.round.flatMap((id) => {
    const call = cp.calls[id];
    return call?.status === 'running' && call.child ? [call] : [];
  });
}

/** Every child a checkpoint's current round linked (any status), newest attempt per call. */
export function linkedChildRuns(cp: Checkpoint): ChildRunRef[] {
  return cp.round.flatMap((id) => {
    const child = cp.calls[id]?.child;
    return child ? [child] : [];
  });
}

function lastAnswer(cp: Checkpoint): string {
  for (let i = cp.messages.length - 1; i >= cp.historyLength; i -= 1) {
    const m = cp.messages[i];
    if (m?.role === 'assistant' && m.content !== '') return m.content;
  }
  return '';
}

/** What a finished child run means to its parent's call; null while the child has not ended. */
export function childRunOutcome(cp: Checkpoint): ToolResult | null {
  const t = cp.termination;
  if (cp.status !== 'done' || !t) return null;
  const agent = cp.identity.agent;
  const id = cp.identity.runId;
  switch (t.kind) {
    case 'natural_end':
    case 'behavior_requested':
      return { kind: 'success', output: lastAnswer(cp) };
    case 'stopped':
      return {
        kind: 'warning',
        output: lastAnswer(cp),
        message: `child run ${id} (${agent}) stopped early: ${t.code}${t.detail ? ` (${t.detail})` : ''}`,
      };
    case 'cancelled':
      return {
        kind: 'error',
        code: 'child_run_cancelled',
        message: `child run ${id} (${agent}) was cancelled before it answered`,
      };
    case 'blocked':
      return {
        kind: 'error',
        code: 'child_run_blocked',
        message: `child run ${id} (${agent}) was blocked: ${t.reason}`,
      };
    case 'error':
      return {
        kind: 'error',
        code: 'child_run_failed',
        message: `child run ${id} (${agent}) failed: ${t.message}`,
      };
    case 'suspended':
      return null;
  }
}

/** The tool result a finished child run delivers to its parent's call (null: not a child, or not ended). */
export function childRunResult(cp: Checkpoint): ToolExecutionResult | null {
  const parent = cp.identity.parent;
  const result = childRunOutcome(cp);
  if (!parent || !result) return null;
  const finishedAt = cp.finishedAt ?? cp.updatedAt;
  return {
    toolCallId: parent.toolCallId,
    attempt: parent.attempt,
    result,
    patches: [],
    startedAt: cp.startedAt ?? cp.createdAt,
    finishedAt,
    child: {
      runId: cp.identity.runId,
      agent: cp.identity.agent,
      status: 'done',
      termination: cp.termination ?? { kind: 'error', message: 'ended without a reason' },
      toolCallId: parent.toolCallId,
    },
  };
}

/** A result for a call whose child run could not be created (e.g. its agent is unknown). */
export function childStartFailure(
  call: Pick<ToolCallState, 'id' | 'name' | 'attempt'>,
  code: string,
  message: string,
  now: number,
): ToolExecutionResult {
  return {
    toolCallId: call.id,
    attempt: call.attempt,
    result: { kind: 'error', code, message: `agent tool ${call.name}: ${message}` },
    patches: [],
    startedAt: now,
    finishedAt: now,
  };
}
