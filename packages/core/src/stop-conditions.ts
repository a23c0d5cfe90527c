import type { Checkpoint, JsonValue, StopCondition, TerminationReason } from '@baton/protocol';
import { canonicalJson, compileContentPattern, contentMatches } from '@baton/protocol';

/** Canonical signature of a tool call: name plus arguments with object keys sorted. */
export function toolCallSignature(name: string, args: JsonValue): string {
  return `${name}:${canonicalJson(args)}`;
}

export interface StopEvaluationInput {
  readonly checkpoint: Pick<Checkpoint, 'step' | 'usage' | 'counters' | 'startedAt' | 'messages'>;
  readonly now: number;
  /** Text of the assistant message of the step being ended. */
  readonly lastAssistantText: string;
}

/** Largest number of tool signatures any condition needs to remember. */
export function loopHistoryLimit(conditions: readonly StopCondition[]): number {
  let max = 0;
  for (const c of conditions) if (c.type === 'loop_detection') max = Math.max(max, c.window);
  return max;
}

/**
 * Evaluates the conditions in declaration order and returns the first that fires.
 * Thresholds are inclusive where the seed says "exceeds a limit of N uses": a run with
 * max_rounds 3 performs at most 3 inference rounds.
 */
export function evaluateStopConditions(
  conditions: readonly StopCondition[],
  input: StopEvaluationInput,
): Extract<TerminationReason, { kind: 'stopped' }> | null {
  const { checkpoint, now } = input;
  for (const condition of conditions) {
    const fired = evaluateOne(condition, checkpoint, now, input.lastAssistantText);
    if (fired) return { kind: 'stopped', code: condition.type, detail: fired };
  }
  return null;
}

function evaluateOne(
  condition: StopCondition,
  cp: StopEvaluationInput['checkpoint'],
  now: number,
  lastText: string,
): string | null {
  switch (condition.type) {
    case 'max_rounds':
      return cp.step >= condition.rounds
        ? `reached ${cp.step} of ${condition.rounds} rounds`
        : null;
    case 'timeout': {
      if (cp.startedAt === null) return null;
      const elapsed = now - cp.startedAt;
      return elapsed >= condition.seconds * 1000
        ? `ran ${Math.round(elapsed)} ms, limit ${condition.seconds * 1000} ms`
        : null;
    }
    case 'token_budget':
      return cp.usage.totalTokens > condition.maxTotal
        ? `used ${cp.usage.totalTokens} tokens, budget ${condition.maxTotal}`
        : null;
    case 'consecutive_errors':
      return cp.counters.consecutiveErrors >= condition.max
        ? `${cp.counters.consecutiveErrors} consecutive tool errors, limit ${condition.max}`
        : null;
    case 'stop_on_tool':
      return cp.counters.lastStepTools.includes(condition.toolName)
        ? `tool ${condition.toolName} was called`
        : null;
    case 'content_match': {
      const compiled = compileContentPattern(condition.pattern, condition.flags);
      // Only a checkpoint stored before patterns were RE2 can hold one that does not compile.
      if (!compiled.ok) return null;
      return contentMatches(compiled.pattern, lastText)
        ? `assistant output matched /${condition.pattern}/`
        : null;
    }
    case 'loop_detection': {
      const threshold = condition.threshold ?? 2;
      const window = cp.counters.recentToolCalls.slice(-condition.window);
      const counts = new Map<string, number>();
      for (const sig of window) {
        const n = (counts.get(sig) ?? 0) + 1;
        if (n >= threshold)
          return `identical call repeated ${n} times within ${condition.window}: ${sig.slice(0, 120)}`;
        counts.set(sig, n);
      }
      return null;
    }
  }
}
