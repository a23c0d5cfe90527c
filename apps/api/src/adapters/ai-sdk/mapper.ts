import type { RunEvent, SuspendReason, TerminationReason } from '@baton/protocol';
import { outcomeErrorText } from '../shared.ts';
import { downgradeChunk, type AiSdkMajor, type UiChunk, type UiFinishReason } from './chunks.ts';

/**
 * Baton events -> AI SDK UI message stream chunks, for ONE HTTP response (one chat "turn").
 *
 * A Baton run may span several turns: it suspends (finish 'tool-calls'), the client answers on a
 * new request, and the run's later events stream on that new response. Each response gets its own
 * mapper; `history` primes it with the events earlier responses already delivered (they produce no
 * chunks, they only tell the mapper e.g. why a call was suspended).
 *
 * The mapper is stateful but pure: no I/O, no clock; chunks depend only on the events given.
 */
export interface UiStreamMapperOptions {
  readonly major: AiSdkMajor;
  /**
   * id of the assistant UI message this response writes. Pass the client's last assistant
   * message id when continuing it (decisions), so the client appends to the same message.
   */
  readonly messageId?: string;
  /** Events delivered to the client by earlier responses of the same run. */
  readonly history?: readonly RunEvent[];
  /**
   * A resumed stream replays the whole run into one message (the client resets its message on
   * the first `start`, then rebuilds it): the suspensions of earlier turns, up to this seq, close
   * their step instead of finishing the message.
   */
  readonly replayedThroughSeq?: number;
}

export interface UiStreamMapper {
  /** Chunks for one event, in order; [] once the response's terminal chunk was emitted. */
  map(event: RunEvent): UiChunk[];
  /**
   * Closes the response when the event stream ends: open parts and the step are closed and,
   * when no run.finished was seen, a finish with reason 'interrupted' (v7) / 'other' (v6).
   */
  end(): UiChunk[];
  /** True once finish/abort was emitted: later events belong to the next response. */
  readonly done: boolean;
}

/** Finish reason for a run that ended (or suspended) with this termination. */
export function finishReasonFor(termination: TerminationReason): UiFinishReason {
  switch (termination.kind) {
    case 'suspended':
      return 'tool-calls';
    case 'natural_end':
    case 'behavior_requested':
      return 'stop';
    case 'stopped':
      // A budget ran out ("generation was cut by a limit"); every other stop condition is a
      // policy decision the model did not make, which the SDK calls 'other'.
      return termination.code === 'token_budget' || termination.code === 'max_rounds'
        ? 'length'
        : 'other';
    case 'blocked':
      return 'other';
    case 'error':
      return 'error';
    case 'cancelled':
      return 'other'; // not used: a cancelled run ends with abort, not finish
  }
}

export function createUiStreamMapper(opts: UiStreamMapperOptions): UiStreamMapper {
  const { major } = opts;
  let started = false;
  let done = false;
  let stepOpen = false;
  /** Open text / reasoning part id per Baton message id. */
  const openText = new Map<string, string>();
  const openReasoning = new Map<string, string>();
  /** Messages whose text / reasoning was streamed as deltas (message.assistant then adds none). */
  const streamedText = new Set<string>();
  const streamedReasoning = new Set<string>();
  /** inference.reset count per message id: a retried inference writes into fresh parts. */
  const resets = new Map<string, number>();
  const suspendReasons = new Map<string, SuspendReason>();
  const cancelledByDecision = new Set<string>();

  const partId = (kind: 'text' | 'reasoning', messageId: string): string => {
    const n = resets.get(messageId) ?? 0;
    return n === 0 ? `${kind}:${messageId}` : `${kind}:${messageId}:${n}`;
  };

  function track(event: RunEvent): void {
    if (event.type === 'tool_call.suspended')
      suspendReasons.set(event.toolCallId, event.ticket.reason);
    else if (event.type === 'decision.applied' && event.decision.action === 'cancel')
      cancelledByDecision.add(event.decision.toolCallId);
  }
  for (const event of opts.history ?? []) track(event);

  function closeMessage(messageId: string, out: UiChunk[]): void {
    const r = openReasoning.get(messageId);
    if (r !== undefined) {
      out.push({ type: 'reasoning-end', id: r });
      openReasoning.delete(messageId);
    }
    const t = openText.get(messageId);
    if (t !== undefined) {
      out.push({ type: 'text-end', id: t });
      openText.delete(messageId);
    }
  }

  function closeAll(out: UiChunk[]): void {
    for (const id of new Set([...openReasoning.keys(), ...openText.keys()])) closeMessage(id, out);
  }

  function closeStep(out: UiChunk[]): void {
    closeAll(out);
    if (stepOpen) out.push({ type: 'finish-step' });
    stepOpen = false;
  }

  function emitWhole(
    kind: 'text' | 'reasoning',
    messageId: string,
    content: string,
    out: UiChunk[],
  ): void {
    const id = partId(kind, messageId);
    if (kind === 'text')
      out.push(
        { type: 'text-start', id },
        { type: 'text-delta', id, delta: content },
        { type: 'text-end', id },
      );
    else
      out.push(
        { type: 'reasoning-start', id },
        { type: 'reasoning-delta', id, delta: content },
        { type: 'reasoning-end', id },
      );
  }

  function finish(termination: TerminationReason, out: UiChunk[]): void {
    closeStep(out);
    if (termination.kind === 'cancelled') out.push({ type: 'abort', reason: 'run cancelled' });
    else {
      if (termination.kind === 'error') out.push({ type: 'error', errorText: termination.message });
      out.push({ type: 'finish', finishReason: finishReasonFor(termination) });
    }
    done = true;
  }

  function translate(event: RunEvent, out: UiChunk[]): void {
    switch (event.type) {
      case 'step.started':
        if (stepOpen) closeStep(out);
        out.push({ type: 'start-step' });
        stepOpen = true;
        return;
      case 'text.delta': {
        let id = openText.get(event.messageId);
        if (id === undefined) {
          id = partId('text', event.messageId);
          openText.set(event.messageId, id);
          out.push({ type: 'text-start', id });
        }
        streamedText.add(event.messageId);
        out.push({ type: 'text-delta', id, delta: event.delta });
        return;
      }
      case 'reasoning.delta': {
        let id = openReasoning.get(event.messageId);
        if (id === undefined) {
          id = partId('reasoning', event.messageId);
          openReasoning.set(event.messageId, id);
          out.push({ type: 'reasoning-start', id });
        }
        streamedReasoning.add(event.messageId);
        out.push({ type: 'reasoning-delta', id, delta: event.delta });
        return;
      }
      case 'inference.reset': {
        // Close the abandoned parts; v7 then retracts the step's parts with reset-step. v6 has
        // no retraction: the partial text stays visible and the retry writes into new parts.
        closeMessage(event.messageId, out);
        if (stepOpen) out.push({ type: 'reset-step' });
        resets.set(event.messageId, (resets.get(event.messageId) ?? 0) + 1);
        streamedText.delete(event.messageId);
        streamedReasoning.delete(event.messageId);
        return;
      }
      case 'message.assistant': {
        const { message } = event;
        if (message.reasoning && !streamedReasoning.has(message.id))
          emitWhole('reasoning', message.id, message.reasoning, out);
        if (message.content !== '' && !streamedText.has(message.id))
          emitWhole('text', message.id, message.content, out);
        closeMessage(message.id, out);
        return;
      }
      case 'tool_call.created':
        closeAll(out);
        out.push(
          { type: 'tool-input-start', toolCallId: event.toolCallId, toolName: event.toolName },
          {
            type: 'tool-input-available',
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            input: event.arguments,
          },
        );
        return;
      case 'tool_call.suspended':
        // approval: the client renders approve/deny. client_tool and input: the part stays
        // input-available; the client answers with addToolOutput (its output is the payload).
        if (event.ticket.reason === 'approval')
          out.push({
            type: 'tool-approval-request',
            approvalId: event.toolCallId,
            toolCallId: event.toolCallId,
            reason: event.ticket.message,
          });
        return;
      case 'tool_call.result': {
        closeAll(out);
        const { outcome, toolCallId } = event;
        if (outcome.status === 'succeeded')
          out.push({ type: 'tool-output-available', toolCallId, output: outcome.output ?? null });
        else if (
          outcome.status === 'cancelled' &&
          cancelledByDecision.has(toolCallId) &&
          suspendReasons.get(toolCallId) !== 'client_tool' &&
          suspendReasons.get(toolCallId) !== 'input'
        )
          out.push({ type: 'tool-output-denied', toolCallId });
        else
          out.push({ type: 'tool-output-error', toolCallId, errorText: outcomeErrorText(outcome) });
        return;
      }
      case 'step.finished':
        closeStep(out);
        return;
      case 'run.finished':
        if (event.status === 'waiting' && event.seq <= (opts.replayedThroughSeq ?? 0))
          closeStep(out);
        else finish(event.termination, out);
        return;
      case 'run.created':
      case 'run.started':
      case 'run.status':
      case 'message.input':
      case 'phase':
      case 'tool_call.status':
      case 'tool_call.deadline_expired':
      case 'tool_call.deadline_escalated':
      case 'decision.applied':
      case 'decision.discarded':
      case 'child_run.linked':
      case 'child_run.finished':
      case 'run.cancel_requested':
      case 'state.delta':
      case 'state.conflict':
      case 'model.retry':
        // The UI stream has no retry part; the reset before the next attempt's deltas suffices.
        return;
    }
  }

  function emit(raw: UiChunk[]): UiChunk[] {
    const out: UiChunk[] = [];
    for (const chunk of raw) {
      const c = downgradeChunk(major, chunk);
      if (c !== null) out.push(c);
    }
    return out;
  }

  function begin(out: UiChunk[]): void {
    if (started) return;
    started = true;
    out.push(
      opts.messageId === undefined
        ? { type: 'start' }
        : { type: 'start', messageId: opts.messageId },
    );
  }

  return {
    map(event) {
      if (done) return [];
      const out: UiChunk[] = [];
      begin(out);
      track(event);
      translate(event, out);
      return emit(out);
    },
    end() {
      if (done) return [];
      const out: UiChunk[] = [];
      begin(out);
      closeStep(out);
      out.push({ type: 'finish', finishReason: 'interrupted' });
      done = true;
      return emit(out);
    },
    get done() {
      return done;
    },
  };
}
