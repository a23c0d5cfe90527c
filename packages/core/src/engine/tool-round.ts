import type {
  ChildRunRef,
  JsonValue,
  SuspendTicket,
  ToolCallState,
  ToolExecutionResult,
  ToolResult,
} from '@baton/protocol';
import type { GateDecision } from '../plugins.ts';
import { combineGateDecisions } from '../plugins.ts';
import type { ToolDefinition } from '../tools.ts';
import { own } from '../own.ts';
import { toJsonSchema, toolInputSchema } from '../tools.ts';
import { hookContext, traitsOf } from './context.ts';
import { withResolvedDeadline } from './ticket-deadline.ts';
import type { Draft } from './draft.ts';
import { applyCommonCommands, finishRun, runPhaseHooks } from './lifecycle.ts';
import { applicableDecisions, roundState } from './round-state.ts';
import { completeToolRound } from './step-end.ts';
import { childDepthError, linkChildRun } from './child-runs.ts';

export interface ToolInvocation {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly arguments: JsonValue;
  readonly attempt: number;
  readonly idempotencyKey: string;
  readonly resume?: { readonly decisionId: string; readonly payload: JsonValue | undefined };
  /** An agent tool's call: the driver starts (or waits for) this child run instead of executing. */
  readonly child?: ChildRunRef;
}

function idempotencyKey(runId: string, callId: string, attempt: number): string {
  return `${runId}:${callId}:${attempt}`;
}

export function invocationFor(draft: Pick<Draft, 'cp'>, call: ToolCallState): ToolInvocation {
  const resuming = call.attempt > 0 && call.decisionId !== undefined;
  return {
    toolCallId: call.id,
    toolName: call.name,
    arguments: resuming ? (call.replayArguments ?? call.arguments) : call.arguments,
    attempt: call.attempt,
    idempotencyKey: idempotencyKey(draft.cp.identity.runId, call.id, call.attempt),
    ...(call.child ? { child: call.child } : {}),
    ...(resuming && call.decisionId !== undefined
      ? { resume: { decisionId: call.decisionId, payload: call.resumePayload } }
      : {}),
  };
}

function builtinGate(
  tool: ToolDefinition | undefined,
  call: ToolCallState,
  resuming: boolean,
): GateDecision | undefined {
  if (!tool) return undefined;
  if (resuming) {
    // UseDecisionAsToolResult: the decision payload is the result; nothing executes.
    return tool.clientSide !== undefined || tool.resumeMode === 'use_decision_as_tool_result'
      ? { kind: 'set_result', result: { kind: 'success', output: call.resumePayload ?? null } }
      : undefined;
  }
  if (tool.clientSide) {
    const ticket: SuspendTicket = {
      reason: 'client_tool',
      message: tool.clientSide.message ?? `Run ${tool.name} on the client and send its output`,
      parameters: call.arguments,
      resumeMode: 'use_decision_as_tool_result',
      ...(tool.clientSide.outputSchema
        ? { responseSchema: toJsonSchema(tool.clientSide.outputSchema) }
        : {}),
    };
    return { kind: 'suspend', ticket };
  }
  if (tool.approval) {
    const message =
      typeof tool.approval.message === 'function'
        ? tool.approval.message(call.arguments)
        : (tool.approval.message ?? `Approve ${tool.name}?`);
    const ticket: SuspendTicket = {
      reason: 'approval',
      message,
      parameters: call.arguments,
      resumeMode: tool.resumeMode ?? 'replay_tool_call',
      ...(tool.approval.responseSchema
        ? { responseSchema: toJsonSchema(tool.approval.responseSchema) }
        : {}),
    };
    return { kind: 'suspend', ticket };
  }
  return undefined;
}

/** The ticket of an event wait: its expiry fixed, and that expiry the call's deadline. */
function eventWaitTicket(draft: Draft, ticket: SuspendTicket): SuspendTicket {
  const { waitFor } = ticket;
  if (waitFor?.kind !== 'event') return ticket;
  const expiresAt = waitFor.expiresAt ?? draft.now + waitFor.timeoutMs;
  return {
    ...ticket,
    waitFor: { ...waitFor, expiresAt },
    deadline: ticket.deadline ?? {
      at: expiresAt,
      outcome: { action: 'resume', payload: { timedOut: true } },
    },
  };
}

/** Settles a call without executing it (gate outcome or a tool result). */
function settleCall(draft: Draft, call: ToolCallState, result: ToolResult): void {
  if (result.kind === 'pending') {
    draft.setCallStatus(call.id, 'suspended');
    const { waitFor } = result.ticket;
    // The wait's expiry is fixed when the call suspends (commit time), so every reader agrees.
    // An event wait's timeout is the call's deadline (unless the tool set its own): the one
    // timer index fires it through expireDeadline, like every other timed wait.
    const waiting =
      waitFor?.kind === 'event' ? eventWaitTicket(draft, result.ticket) : result.ticket;
    const ticket = withResolvedDeadline(draft, call, waiting);
    call.ticket = ticket;
    draft.emit({ type: 'tool_call.suspended', toolCallId: call.id, toolName: call.name, ticket });
    return;
  }
  const failed = result.kind === 'error';
  draft.setCallStatus(call.id, failed ? 'failed' : 'succeeded');
  call.outcome =
    result.kind === 'error'
      ? { status: 'failed', error: result.message }
      : result.kind === 'warning'
        ? { status: 'succeeded', output: result.output, warning: result.message }
        : { status: 'succeeded', output: result.output };
  call.completedAt = draft.now;
  draft.cp.counters.consecutiveErrors = failed ? draft.cp.counters.consecutiveErrors + 1 : 0;
  const durationMs =
    call.startedAt === undefined ? undefined : Math.max(0, draft.now - call.startedAt);
  draft.emit({
    type: 'tool_call.result',
    toolCallId: call.id,
    toolName: call.name,
    outcome: call.outcome,
    ...(durationMs === undefined ? {} : { durationMs }),
  });
}

/** ToolGate for one call; returns true when it was allowed to execute (now Running). */
function gateCall(draft: Draft, call: ToolCallState): 'execute' | 'settled' | 'terminated' {
  const tool = draft.ctx.tools.get(call.name);
  const resuming = call.status === 'resuming';
  if (!tool) {
    settleCall(draft, call, {
      kind: 'error',
      message: `tool "${call.name}" is not available to this agent`,
      code: 'tool_missing',
    });
    return 'settled';
  }
  const decisions: (GateDecision | undefined)[] = [builtinGate(tool, call, resuming)];
  const gateHooks = draft.ctx.plugins.filter((p) => p.hooks.tool_gate);
  if (gateHooks.length > 0) {
    const base = hookContext(draft.cp, draft.now);
    for (const plugin of gateHooks)
      decisions.push(plugin.hooks.tool_gate?.({ ...base, call, resuming }));
  }
  const decision = combineGateDecisions(decisions);
  switch (decision.kind) {
    case 'block':
      settleCall(draft, call, {
        kind: 'error',
        message: `blocked: ${decision.reason}`,
        code: 'blocked',
      });
      if (decision.terminateRun) {
        finishRun(draft, { kind: 'blocked', reason: decision.reason });
        return 'terminated';
      }
      return 'settled';
    case 'suspend':
      settleCall(draft, call, { kind: 'pending', ticket: decision.ticket });
      return 'settled';
    case 'set_result':
      settleCall(draft, call, decision.result);
      return 'settled';
    case 'allow':
      break;
  }
  const args = resuming ? (call.replayArguments ?? call.arguments) : call.arguments;
  const parsed = toolInputSchema(tool).safeParse(args);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    settleCall(draft, call, {
      kind: 'error',
      message: `invalid arguments for ${call.name}: ${issues}`,
      code: 'invalid_arguments',
    });
    return 'settled';
  }
  const tooDeep = tool.agent ? childDepthError(draft.cp, call.name) : null;
  if (tooDeep) {
    settleCall(draft, call, tooDeep);
    return 'settled';
  }
  draft.setCallStatus(call.id, 'running');
  call.startedAt = draft.now;
  delete call.child;
  if (tool.agent) {
    const input = typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {};
    linkChildRun(draft, call, tool.agent, input);
  }
  applyCommonCommands(draft, runPhaseHooks(draft, 'before_tool_execute', { call }));
  return 'execute';
}

/**
 * ToolGate + BeforeToolExecute for the calls that can move now. Parallel modes gate every New or
 * Resuming call against the same snapshot; Sequential gates one call at a time, so each gate sees
 * the effects of the calls before it, and stops at the first suspension.
 */
export function prepareTools(draft: Draft): { draft: Draft; invocations: ToolInvocation[] } {
  const { cp } = draft;
  const invocations: ToolInvocation[] = [];
  const sequential = !traitsOf(cp).concurrent;
  cp.phase = 'tool_gate';
  for (const call of draft.roundCalls()) {
    if (call.status === 'running') {
      // Already executing (or lost with a crashed process): the same attempt runs again.
      invocations.push(invocationFor(draft, call));
      if (sequential) break;
      continue;
    }
    if (call.status === 'suspended' && sequential) break;
    if (call.status !== 'new' && call.status !== 'resuming') continue;
    const outcome = gateCall(draft, call);
    if (outcome === 'terminated') return { draft, invocations: [] };
    if (outcome === 'execute') {
      invocations.push(invocationFor(draft, call));
      if (sequential) break;
    } else if (sequential && draft.call(call.id).status === 'suspended') {
      break;
    }
  }
  if (invocations.length > 0) cp.phase = 'before_tool_execute';
  else settleRound(draft);
  return { draft, invocations };
}

/** AfterToolExecute for results of executions; stale or duplicate results are ignored. */
export function applyToolResults(draft: Draft, results: readonly ToolExecutionResult[]): Draft {
  const { cp } = draft;
  const sequential = !traitsOf(cp).concurrent;
  let termination = null;
  for (const r of results) {
    const call = own(cp.calls, r.toolCallId);
    if (!call || call.status !== 'running' || call.attempt !== r.attempt) continue;
    cp.phase = 'after_tool_execute';
    const replay = call.replayOrigin;
    settleCall(draft, call, r.result);
    // Only the child this attempt linked reports its end here.
    if (r.child && call.child?.runId === r.child.runId)
      draft.emit({ type: 'child_run.finished', child: r.child });
    if (r.patches.length > 0) {
      call.patches = [...(call.patches ?? []), ...r.patches];
      if (sequential) {
        try {
          draft.applyStatePatches(r.patches);
        } catch (error) {
          return finishRun(draft, { kind: 'error', message: (error as Error).message });
        }
      }
    }
    draft.mark(
      replay === 'waiting'
        ? 'run_start_replay'
        : replay === 'running'
          ? 'decision_replay'
          : 'tool_results_committed',
    );
    for (const command of runPhaseHooks(draft, 'after_tool_execute', { call })) {
      if (command.kind === 'decision') {
        if (!cp.decisionLog.some((d) => d.decisionId === command.decision.decisionId)) {
          cp.inbox.push(command.decision);
          cp.decisionLog.push(command.decision);
        }
      } else {
        termination ??= applyCommonCommands(draft, [command]);
      }
    }
  }
  if (termination) return finishRun(draft, termination);
  return settleRound(draft);
}

/** After any change inside a round: enter Waiting, close the round, or keep executing. */
export function settleRound(draft: Draft): Draft {
  if (draft.cp.status !== 'running') return draft;
  const state = roundState(draft.cp);
  if (state === 'complete') return completeToolRound(draft);
  // Post-tool RESUME gate: decisions that arrived meanwhile are applied before judging the wait.
  if (state === 'waiting' && applicableDecisions(draft.cp).length === 0) {
    draft.cp.phase = 'after_tool_execute';
    return finishRun(draft, { kind: 'suspended' });
  }
  return draft;
}
