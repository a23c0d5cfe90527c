import type {
  Checkpoint,
  Decision,
  EventBody,
  InputMessage,
  JsonValue,
  Message,
  RunEvent,
  RunIdentity,
  ToolCallState,
  ToolMessage,
} from '@baton/protocol';
import { ZERO_USAGE } from '@baton/protocol';
import type { AgentSpec } from '../agent.ts';
import { own } from '../own.ts';
import { applyPatches, initialState } from '../state-keys.ts';
import { loopHistoryLimit, toolCallSignature } from '../stop-conditions.ts';
import { isTerminalCallStatus } from '../tool-call-status.ts';
import { specContext } from './context.ts';
import { toolMessageFor } from './tool-messages.ts';

/** What a fork needs of the run it forks (its current checkpoint stands for its static parts). */
export interface ForkSource {
  /** The original's checkpoint as it stands now: its mode, stop conditions, history prefix. */
  readonly checkpoint: Checkpoint;
  /** The original's events from seq 1, at least up to atSeq, in order and without gaps. */
  readonly events: readonly RunEvent[];
}

export interface ForkRequest {
  readonly atSeq: number;
  /** The new run's identity (its own run and thread ids). */
  readonly identity: RunIdentity;
  /** User messages to add after the fork point (only at a step boundary or after the run ended). */
  readonly input?: readonly InputMessage[];
  /** Thread-scope state the fork's thread starts with (the keys' defaults fill the rest). */
  readonly threadState?: Record<string, JsonValue>;
}

export type ForkResult =
  | {
      readonly kind: 'forked';
      /** The state the original had right after event atSeq, as the fork's checkpoint. */
      readonly checkpoint: Checkpoint;
      /**
       * The fork's first events: the original's bodies 1…atSeq unchanged, then what the fork
       * adds (a reopened run's status change, its input messages).
       */
      readonly events: readonly EventBody[];
    }
  | { readonly kind: 'seq_out_of_range'; readonly min: number; readonly max: number }
  | {
      readonly kind: 'input_refused';
      readonly reason: 'mid_round' | 'waiting';
      readonly message: string;
    }
  | { readonly kind: 'input_required'; readonly message: string };

/** The body of an event, without its envelope (seq, runId, threadId, turnId, at). */
export function eventBody(event: RunEvent): EventBody {
  const body: Record<string, unknown> = { ...event };
  delete body['seq'];
  delete body['runId'];
  delete body['threadId'];
  delete body['turnId'];
  delete body['at'];
  return body as EventBody;
}

/**
 * The smallest seq a fork may start at: the end of the run's start (its last message.input of
 * the start commit, else run.started). Before it the run has no conversation of its own yet.
 */
export function firstForkSeq(events: readonly RunEvent[]): number | null {
  let seq: number | null = null;
  for (const e of events) {
    if (e.type === 'run.started') seq = e.seq;
    else if (e.type === 'message.input' && seq !== null) seq = e.seq;
    else if (seq !== null) break;
  }
  return seq;
}

function inputMessageId(runId: string, index: number): string {
  return `${runId}:in:${index}`;
}

/**
 * Folds a run's event log up to atSeq into the checkpoint it had right after that event, the
 * state a fork continues from (goa-ai's run package: state is derived from the log). Pure.
 *
 * What the log holds is restored exactly: messages (thread history, input, assistant answers,
 * the tool messages a closed round committed), the round's calls with their statuses, tickets,
 * outcomes, attempts and decisions, state patches, counters, usage as of the last finished
 * step. What it does not hold is not invented: messages plugins added (`add_message`), the
 * BeforeInference context of a step that had not answered yet, state patches of parallel calls
 * whose round had not closed, the thread state the run inherited (`threadState` stands for it).
 * The fork is a new run: it is not cancel-requested, and a run that had finished at atSeq
 * continues only with input.
 */
export function forkCheckpoint(spec: AgentSpec, source: ForkSource, req: ForkRequest): ForkResult {
  const { events } = source;
  const min = firstForkSeq(events);
  const max = events.length === 0 ? 0 : (events[events.length - 1]?.seq ?? 0);
  if (min === null || !Number.isInteger(req.atSeq) || req.atSeq < min || req.atSeq > max)
    return { kind: 'seq_out_of_range', min: min ?? max + 1, max };
  const orig = source.checkpoint;
  const { registry } = specContext(spec);
  const limit = loopHistoryLimit(orig.stopConditions);
  const cp: Checkpoint = {
    v: orig.v,
    identity: req.identity,
    status: 'created',
    phase: 'run_start',
    step: 0,
    executionMode: orig.executionMode,
    replayPolicy: orig.replayPolicy,
    stopConditions: [...orig.stopConditions],
    messages: orig.messages.slice(0, orig.historyLength),
    historyLength: orig.historyLength,
    calls: {},
    round: [],
    state: initialState(registry, req.threadState ?? {}),
    usage: { ...ZERO_USAGE },
    counters: { consecutiveErrors: 0, recentToolCalls: [], lastStepTools: [] },
    inbox: [],
    decisionLog: [],
    inference: null,
    termination: null,
    cancelRequested: false,
    metadata: { ...orig.metadata },
    createdAt: orig.createdAt,
    startedAt: null,
    updatedAt: orig.createdAt,
    finishedAt: null,
  };
  const conflicts: { key: string; rejected: string[] }[] = [];
  const lastDecision = new Map<string, Decision>();
  let origin: 'waiting' | 'running' = 'running';
  const call = (id: string): ToolCallState | undefined => own(cp.calls, id);
  const hasToolMessage = (id: string): boolean =>
    cp.messages.some((m): m is ToolMessage => m.role === 'tool' && m.toolCallId === id);
  const copied: EventBody[] = [];

  for (const e of events) {
    if (e.seq > req.atSeq) break;
    copied.push(eventBody(e));
    cp.updatedAt = e.at;
    if (e.type !== 'decision.applied' && e.type !== 'tool_call.status' && e.type !== 'run.status')
      origin = 'running';
    switch (e.type) {
      case 'run.status':
        cp.status = e.to;
        if (e.from === 'waiting' && e.to === 'running') {
          origin = 'waiting';
          cp.termination = null;
        }
        break;
      case 'run.started':
        cp.startedAt = e.at;
        cp.phase = 'run_start';
        break;
      case 'message.input':
        cp.messages.push(e.message);
        break;
      case 'step.started':
        cp.step = e.step;
        cp.phase = 'before_inference';
        cp.calls = {};
        cp.round = [];
        cp.counters.lastStepTools = [];
        conflicts.length = 0;
        break;
      case 'phase':
        cp.phase = e.phase;
        break;
      case 'message.assistant':
        cp.messages.push(e.message);
        cp.phase = 'after_inference';
        cp.inference = null;
        break;
      case 'tool_call.created':
        cp.calls[e.toolCallId] = {
          id: e.toolCallId,
          name: e.toolName,
          arguments: e.arguments,
          step: e.step,
          index: e.index,
          status: 'new',
          attempt: 0,
          createdAt: e.at,
        };
        cp.round.push(e.toolCallId);
        cp.counters.lastStepTools.push(e.toolName);
        if (limit > 0) {
          cp.counters.recentToolCalls.push(toolCallSignature(e.toolName, e.arguments));
          if (cp.counters.recentToolCalls.length > limit)
            cp.counters.recentToolCalls = cp.counters.recentToolCalls.slice(-limit);
        }
        cp.phase = 'tool_gate';
        break;
      case 'tool_call.status': {
        const c = call(e.toolCallId);
        if (!c) break;
        c.status = e.to;
        if (e.to === 'running') {
          c.startedAt = e.at;
          delete c.child;
        }
        if (e.to === 'resuming') {
          const d = lastDecision.get(c.id);
          c.attempt += 1;
          c.replayOrigin = origin;
          if (d?.payload !== undefined) c.resumePayload = d.payload;
          else delete c.resumePayload;
          const mode = c.ticket?.resumeMode ?? 'replay_tool_call';
          c.replayArguments = mode === 'replay_tool_call' ? c.arguments : (d?.payload ?? null);
        }
        break;
      }
      case 'tool_call.suspended': {
        const c = call(e.toolCallId);
        if (c) c.ticket = e.ticket;
        break;
      }
      case 'tool_call.result': {
        const c = call(e.toolCallId);
        if (!c) break;
        c.outcome = e.outcome;
        c.completedAt = e.at;
        // Only settled executions count errors (a decision's or the run's cancel does not).
        if (e.outcome.status !== 'cancelled')
          cp.counters.consecutiveErrors =
            e.outcome.status === 'failed' ? cp.counters.consecutiveErrors + 1 : 0;
        break;
      }
      case 'decision.applied': {
        cp.decisionLog.push(e.decision);
        lastDecision.set(e.decision.toolCallId, e.decision);
        const c = call(e.decision.toolCallId);
        if (c) c.decisionId = e.decision.decisionId;
        break;
      }
      case 'state.delta':
        cp.state = applyPatches(registry, cp.state, e.patches);
        break;
      case 'state.conflict':
        conflicts.push({ key: e.key, rejected: e.rejected });
        break;
      case 'step.finished':
        closeRound(cp, orig, conflicts, hasToolMessage);
        cp.usage = { ...e.usage };
        cp.phase = 'step_end';
        break;
      case 'run.cancel_requested':
        cp.cancelRequested = true;
        break;
      case 'run.finished':
        cp.termination = e.termination;
        cp.usage = { ...e.usage };
        if (e.status === 'waiting') {
          cp.status = 'waiting';
          break;
        }
        if (cp.phase !== 'step_end' && cp.phase !== 'run_start')
          for (const id of cp.round) {
            const c = call(id);
            if (c && !hasToolMessage(id)) cp.messages.push(toolMessageFor(orig, c));
          }
        cp.phase = 'run_end';
        cp.status = 'done';
        cp.inference = null;
        cp.finishedAt = e.at;
        break;
      default:
        break;
    }
  }
  // A fork is a new run: the original's cancel request is not its own.
  cp.cancelRequested = false;
  return continueFork(cp, copied, req);
}

/** The tool messages a round commits when it closes (completeToolRound), warnings included. */
function closeRound(
  cp: Checkpoint,
  orig: Checkpoint,
  conflicts: readonly { key: string; rejected: readonly string[] }[],
  hasToolMessage: (id: string) => boolean,
): void {
  if (cp.round.length === 0 || !cp.round.every((id) => isClosed(cp, id))) return;
  for (const id of cp.round) {
    const c = own(cp.calls, id);
    if (!c || hasToolMessage(id)) continue;
    const keys = conflicts.filter((x) => x.rejected.includes(id)).map((x) => x.key);
    if (keys.length > 0 && c.outcome?.status === 'succeeded')
      c.outcome = {
        ...c.outcome,
        warning: `state changes discarded: key ${keys.join(', ')} was also written by an earlier call in this round`,
      };
    // The original's ids: the messages before the fork point are the original's, byte for byte.
    cp.messages.push(toolMessageFor(orig, c));
  }
}

function isClosed(cp: Checkpoint, id: string): boolean {
  const c = own(cp.calls, id);
  return c !== undefined && isTerminalCallStatus(c.status);
}

/** Where the fork goes from the folded state: as it stands, or with the caller's input. */
function continueFork(cp: Checkpoint, copied: EventBody[], req: ForkRequest): ForkResult {
  const input = req.input ?? [];
  if (cp.status === 'done' && input.length === 0)
    return {
      kind: 'input_required',
      message: `the run had ended at seq ${String(req.atSeq)}: give input to continue it, or fork at an earlier seq`,
    };
  if (
    cp.status === 'waiting' &&
    !cp.round.some((id) => own(cp.calls, id)?.status === 'suspended')
  ) {
    // atSeq fell inside the commit that ended the wait (its calls settled, its status not yet
    // changed): nothing is left to wait for, so the fork goes on with the round.
    copied.push({ type: 'run.status', from: 'waiting', to: 'running' });
    cp.status = 'running';
    cp.termination = null;
  }
  if (input.length === 0) return { kind: 'forked', checkpoint: cp, events: copied };
  if (cp.status === 'waiting')
    return {
      kind: 'input_refused',
      reason: 'waiting',
      message: `at seq ${String(req.atSeq)} the run waits for decisions on its tool calls: fork without input and send the decisions, or fork at a step boundary`,
    };
  const roundOpen = cp.status !== 'done' && cp.phase !== 'step_end' && cp.phase !== 'run_start';
  if (roundOpen)
    return {
      kind: 'input_refused',
      reason: 'mid_round',
      message: `at seq ${String(req.atSeq)} the run is inside step ${String(cp.step)}: input can only follow a step boundary (a step.finished, the run's start or its end)`,
    };
  const events: EventBody[] = [...copied];
  if (cp.status === 'done') {
    // The conversation continues past the original's end: the fork reopens it as its own turn.
    events.push({ type: 'run.status', from: 'done', to: 'running' });
    cp.status = 'running';
    cp.phase = 'step_end';
    cp.termination = null;
    cp.finishedAt = null;
  }
  const runId = cp.identity.runId;
  const start = cp.messages.length;
  input.forEach((m, i) => {
    const message: Message = {
      id: m.id ?? inputMessageId(runId, start + i),
      role: m.role,
      content: m.content,
    };
    cp.messages.push(message);
    events.push({ type: 'message.input', message });
  });
  return { kind: 'forked', checkpoint: cp, events };
}
