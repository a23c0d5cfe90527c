import type { Checkpoint, Decision, JsonValue } from '@baton/protocol';
import { z } from 'zod';
import { DecisionError, RunDoneError } from '../errors.ts';
import { own } from '../own.ts';
import type { Draft } from './draft.ts';
import { applicableDecisions } from './round-state.ts';
import { settleRound } from './tool-round.ts';

function sameDecision(a: Decision, b: Decision): boolean {
  return (
    a.toolCallId === b.toolCallId &&
    a.action === b.action &&
    JSON.stringify(a.payload ?? null) === JSON.stringify(b.payload ?? null)
  );
}

function validatePayload(
  schema: Record<string, JsonValue>,
  payload: JsonValue | undefined,
): string | null {
  let validator: z.ZodType;
  try {
    validator = z.fromJSONSchema(schema);
  } catch {
    return null; // A schema zod cannot express is not enforced rather than rejecting every answer.
  }
  const parsed = validator.safeParse(payload);
  if (parsed.success) return null;
  return parsed.error.issues
    .map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`)
    .join('; ');
}

/** Names the deadline when it is what decided the call first (a client's decision lost the race). */
function deadlineNote(cp: Checkpoint, decisionId: string | undefined): string {
  if (decisionId === undefined) return '';
  const d = cp.decisionLog.find((x) => x.decisionId === decisionId);
  if (d?.source !== 'deadline') return '';
  const outcome = d.action === 'cancel' ? 'denied' : 'resumed';
  return ` (its deadline passed first and ${outcome} it)`;
}

export interface ReceiveResult {
  readonly accepted: Decision[];
  /** decisionIds already seen with the same content: accepted as no-ops. */
  readonly duplicates: string[];
}

/**
 * Accepts decisions into the durable inbox, all or nothing: any invalid decision rejects the
 * batch with a typed error and leaves the checkpoint untouched.
 */
export function receiveDecisions(draft: Draft, decisions: readonly Decision[]): ReceiveResult {
  const { cp } = draft;
  const duplicates: string[] = [];
  const fresh: Decision[] = [];
  for (const decision of decisions) {
    // An id repeated inside the batch counts as already seen too (else it could claim a second call).
    const previous =
      cp.decisionLog.find((d) => d.decisionId === decision.decisionId) ??
      fresh.find((d) => d.decisionId === decision.decisionId);
    if (previous) {
      if (!sameDecision(previous, decision))
        throw new DecisionError(
          'decision_conflict',
          `decisionId ${decision.decisionId} was already used for a different decision`,
          { decisionId: decision.decisionId },
        );
      duplicates.push(decision.decisionId);
      continue;
    }
    fresh.push(decision);
  }
  // A resent decision gets its original answer whatever happened since; a new one needs a run
  // that can still apply it.
  if (fresh.length === 0 && duplicates.length > 0) return { accepted: [], duplicates };
  if (cp.status === 'done') throw new RunDoneError(cp.identity.runId);
  if (cp.cancelRequested)
    throw new DecisionError(
      'run_cancelled',
      `run ${cp.identity.runId} is being cancelled; it accepts no more decisions`,
    );
  const accepted: Decision[] = [];
  const claimed = new Map<string, string>();
  for (const d of cp.inbox) claimed.set(d.toolCallId, d.decisionId);
  for (const decision of fresh) {
    const call = own(cp.calls, decision.toolCallId);
    if (!call)
      throw new DecisionError(
        'call_unknown',
        `run ${cp.identity.runId} has no pending tool call ${decision.toolCallId}`,
        { toolCallId: decision.toolCallId },
      );
    const owner = claimed.get(call.id);
    if (owner !== undefined)
      throw new DecisionError(
        'decision_conflict',
        `tool call ${call.id} already has decision ${owner}${deadlineNote(cp, owner)}`,
        { toolCallId: call.id, decisionId: owner },
      );
    if (call.status !== 'suspended')
      throw new DecisionError(
        'call_not_suspended',
        `tool call ${call.id} is ${call.status}, not suspended; only suspended calls take decisions` +
          deadlineNote(cp, call.decisionId),
        { toolCallId: call.id, status: call.status },
      );
    // A plain approval may omit the payload; when the payload becomes arguments or the result,
    // or when one is given, it must match the ticket's schema.
    const payloadOptional =
      call.ticket?.resumeMode === 'replay_tool_call' && decision.payload === undefined;
    if (decision.action === 'resume' && call.ticket?.responseSchema && !payloadOptional) {
      const problem = validatePayload(call.ticket.responseSchema, decision.payload);
      if (problem)
        throw new DecisionError(
          'payload_invalid',
          `payload for ${call.id} does not match the ticket's response schema: ${problem}`,
          { toolCallId: call.id, responseSchema: call.ticket.responseSchema },
        );
    }
    claimed.set(call.id, decision.decisionId);
    accepted.push(decision);
  }
  cp.inbox.push(...accepted);
  cp.decisionLog.push(...accepted);
  return { accepted, duplicates };
}

/**
 * The RESUME_TOOL_CALL gate: applies the inbox decisions the mode's replay policy allows now.
 * Resume moves the call Suspended -> Resuming with the arguments its resume mode prescribes
 * (the replay itself runs through ToolGate -> BeforeToolExecute -> tool); cancel settles it.
 */
export function applyDecisions(draft: Draft): Draft {
  const { cp } = draft;
  const decisions = applicableDecisions(cp);
  if (decisions.length === 0) return draft;
  const origin = cp.status === 'waiting' ? 'waiting' : 'running';
  if (cp.status === 'waiting') {
    draft.setRunStatus('running');
    cp.termination = null;
  }
  const appliedIds = new Set(decisions.map((d) => d.decisionId));
  cp.inbox = cp.inbox.filter((d) => !appliedIds.has(d.decisionId));
  for (const decision of decisions) {
    const call = draft.call(decision.toolCallId);
    draft.emit({ type: 'decision.applied', decision });
    call.decisionId = decision.decisionId;
    if (decision.action === 'cancel') {
      draft.setCallStatus(call.id, 'cancelled');
      call.outcome = {
        status: 'cancelled',
        error:
          decision.source === 'deadline'
            ? `deadline passed: ${decision.reason ?? 'no decision in time'}`
            : 'cancelled by decision',
      };
      call.completedAt = draft.now;
      draft.emit({
        type: 'tool_call.result',
        toolCallId: call.id,
        toolName: call.name,
        outcome: call.outcome,
      });
      continue;
    }
    draft.setCallStatus(call.id, 'resuming');
    call.attempt += 1;
    call.replayOrigin = origin;
    const payload = decision.payload;
    if (payload !== undefined) call.resumePayload = payload;
    else delete call.resumePayload;
    const mode = call.ticket?.resumeMode ?? 'replay_tool_call';
    if (mode === 'replay_tool_call') call.replayArguments = call.arguments;
    else call.replayArguments = payload ?? null;
  }
  draft.mark(origin === 'waiting' ? 'run_start_replay' : 'decision_replay');
  return settleRound(draft);
}
