import { mergeRoundPatches } from '../state-keys.ts';
import { evaluateStopConditions } from '../stop-conditions.ts';
import { traitsOf } from './context.ts';
import type { Draft } from './draft.ts';
import { applyCommonCommands, finishRun, runPhaseHooks } from './lifecycle.ts';
import { toolMessageFor } from './tool-messages.ts';

function lastAssistantText(draft: Draft): string {
  for (let i = draft.cp.messages.length - 1; i >= 0; i -= 1) {
    const m = draft.cp.messages[i];
    if (m?.role === 'assistant') return m.content;
  }
  return '';
}

/**
 * Closes a round whose calls are all terminal: applies the round's state patches (parallel modes:
 * with conflict detection, in call order), commits tool messages in call order, then StepEnd:
 * hooks and stop conditions decide between the next step and the end of the run.
 */
export function completeToolRound(draft: Draft): Draft {
  const { cp } = draft;
  if (traitsOf(cp).conflictChecks) {
    const perCall = draft.roundCalls().map((c) => ({ callId: c.id, patches: c.patches ?? [] }));
    const merged = mergeRoundPatches(draft.ctx.registry, perCall);
    for (const conflict of merged.conflicts) {
      draft.emit({
        type: 'state.conflict',
        key: conflict.key,
        winner: conflict.winner,
        rejected: conflict.rejected,
      });
    }
    for (const callId of merged.rejectedCalls) {
      const call = draft.call(callId);
      const keys = merged.conflicts.filter((c) => c.rejected.includes(callId)).map((c) => c.key);
      if (call.outcome?.status === 'succeeded') {
        call.outcome = {
          ...call.outcome,
          warning: `state changes discarded: key ${keys.join(', ')} was also written by an earlier call in this round`,
        };
      }
    }
    try {
      draft.applyStatePatches(merged.patches);
    } catch (error) {
      return finishRun(draft, { kind: 'error', message: (error as Error).message });
    }
  }
  for (const call of draft.roundCalls()) cp.messages.push(toolMessageFor(cp, call));
  draft.mark('tool_results_committed');
  return endStep(draft, { naturalEnd: false, lastText: lastAssistantText(draft) });
}

export function endStep(draft: Draft, opts: { naturalEnd: boolean; lastText: string }): Draft {
  const { cp } = draft;
  cp.phase = 'step_end';
  draft.emit({ type: 'step.finished', step: cp.step, usage: { ...cp.usage } });
  const hookTermination = applyCommonCommands(draft, runPhaseHooks(draft, 'step_end'));
  if (hookTermination) return finishRun(draft, hookTermination);
  // A model that asked for no tools has finished: stop conditions only cut runs that would go on.
  if (opts.naturalEnd) return finishRun(draft, { kind: 'natural_end' });
  const stopped = evaluateStopConditions(cp.stopConditions, {
    checkpoint: cp,
    now: draft.now,
    lastAssistantText: opts.lastText,
  });
  if (stopped) return finishRun(draft, stopped);
  return draft;
}
