import type {
  Checkpoint,
  InputMessage,
  JsonValue,
  Message,
  RunIdentity,
  RunOptions,
  TerminationReason,
  ToolMessage,
} from '@baton/protocol';
import { CHECKPOINT_VERSION, ZERO_USAGE } from '@baton/protocol';
import { defaultReplayPolicy } from '../agent.ts';
import type { CommandPhase, HookContext, HookContexts, PhaseCommands } from '../plugins.ts';
import { runHooks } from '../plugins.ts';
import { terminationToRunStatus } from '../run-status.ts';
import { dropEphemeral, initialState } from '../state-keys.ts';
import { isTerminalCallStatus } from '../tool-call-status.ts';
import type { EngineContext } from './context.ts';
import { hookContext } from './context.ts';
import { Draft } from './draft.ts';
import { toolMessageFor } from './tool-messages.ts';

export interface CreateRunInput {
  readonly identity: RunIdentity;
  readonly input: readonly InputMessage[];
  readonly options?: RunOptions;
  /** Thread messages from earlier runs. */
  readonly history?: readonly Message[];
  /** Persistent thread-scope state carried from earlier runs. */
  readonly threadState?: Record<string, JsonValue>;
}

function inputMessageId(runId: string, index: number): string {
  return `${runId}:in:${index}`;
}

export function createCheckpoint(ctx: EngineContext, input: CreateRunInput, now: number): Draft {
  const { agent } = ctx;
  const mode = input.options?.executionMode ?? agent.executionMode ?? 'sequential';
  const history = input.history ?? [];
  const messages: Message[] = [
    ...history,
    ...input.input.map((m, i): Message => ({
      id: m.id ?? inputMessageId(input.identity.runId, i),
      role: m.role,
      content: m.content,
    })),
  ];
  const cp: Checkpoint = {
    v: CHECKPOINT_VERSION,
    identity: input.identity,
    status: 'created',
    phase: 'run_start',
    step: 0,
    executionMode: mode,
    replayPolicy: input.options?.replayPolicy ?? agent.replayPolicy ?? defaultReplayPolicy(mode),
    stopConditions: [...(input.options?.stopConditions ?? agent.stopConditions ?? [])],
    messages,
    historyLength: history.length,
    calls: {},
    round: [],
    state: initialState(ctx.registry, input.threadState ?? {}),
    usage: { ...ZERO_USAGE },
    counters: { consecutiveErrors: 0, recentToolCalls: [], lastStepTools: [] },
    inbox: [],
    decisionLog: [],
    inference: null,
    termination: null,
    cancelRequested: false,
    metadata: { ...(input.options?.metadata ?? {}) },
    ...(input.options?.deadline ? { deadline: input.options.deadline } : {}),
    createdAt: now,
    startedAt: null,
    updatedAt: now,
    finishedAt: null,
  };
  const draft = new Draft(ctx, cp, now);
  draft.emit({ type: 'run.created', agent: agent.name, executionMode: mode });
  return draft;
}

/** Applies hook commands common to several phases; returns a termination if one was requested. */
export function applyCommonCommands<P extends CommandPhase>(
  draft: Draft,
  commands: readonly PhaseCommands[P][],
): TerminationReason | null {
  let termination: TerminationReason | null = null;
  for (const command of commands as readonly { kind: string }[]) {
    const c = command as PhaseCommands[CommandPhase];
    if (c.kind === 'patch_state') draft.applyStatePatches(c.patches);
    else if (c.kind === 'add_message') {
      const id = `${draft.cp.identity.runId}:note:${draft.cp.messages.length}`;
      draft.cp.messages.push({ id, role: c.message.role, content: c.message.content });
    } else if (c.kind === 'terminate') termination ??= c.reason;
  }
  return termination;
}

export function runPhaseHooks<P extends CommandPhase>(
  draft: Draft,
  phase: P,
  extra?: Omit<HookContexts[P], keyof HookContext>,
): PhaseCommands[P][] {
  if (!draft.ctx.plugins.some((p) => p.hooks[phase] !== undefined)) return [];
  const base = hookContext(draft.cp, draft.now);
  return runHooks(draft.ctx.plugins, phase, { ...base, ...(extra ?? {}) } as never);
}

/** RunStart: Created -> Running, input committed (checkpoint trigger UserMessage). */
export function startRun(draft: Draft): Draft {
  const { cp } = draft;
  draft.setRunStatus('running');
  cp.startedAt = draft.now;
  cp.phase = 'run_start';
  draft.emit({ type: 'run.started', agent: cp.identity.agent, executionMode: cp.executionMode });
  for (const message of cp.messages.slice(cp.historyLength))
    draft.emit({ type: 'message.input', message });
  draft.mark('user_message');
  const termination = applyCommonCommands(draft, runPhaseHooks(draft, 'run_start'));
  if (termination) finishRun(draft, termination);
  return draft;
}

/**
 * Every terminal exit (and Suspended) goes through here: unfinished calls are cancelled and given
 * a tool message so the thread stays a valid conversation for the next run.
 */
export function finishRun(draft: Draft, reason: TerminationReason): Draft {
  const { cp } = draft;
  if (reason.kind === 'suspended') {
    draft.setRunStatus('waiting');
    cp.termination = reason;
    draft.emit({
      type: 'run.finished',
      status: 'waiting',
      termination: reason,
      usage: { ...cp.usage },
    });
    draft.mark('run_finished');
    return draft;
  }
  const roundOpen = cp.phase !== 'step_end' && cp.phase !== 'run_start' && cp.round.length > 0;
  if (roundOpen) {
    for (const call of draft.roundCalls()) {
      if (!isTerminalCallStatus(call.status)) {
        draft.setCallStatus(call.id, 'cancelled');
        call.outcome = {
          status: 'cancelled',
          error: `run ended (${reason.kind}) before the call completed`,
        };
        call.completedAt = draft.now;
        draft.emit({
          type: 'tool_call.result',
          toolCallId: call.id,
          toolName: call.name,
          outcome: call.outcome,
        });
      }
    }
    const present = new Set(
      cp.messages.filter((m): m is ToolMessage => m.role === 'tool').map((m) => m.toolCallId),
    );
    for (const call of draft.roundCalls())
      if (!present.has(call.id)) cp.messages.push(toolMessageFor(cp, call));
  }
  // Accepted decisions the run will never apply are recorded as such, not silently dropped.
  for (const decision of cp.inbox)
    draft.emit({
      type: 'decision.discarded',
      decision,
      reason: `run ended (${reason.kind}) before the decision could be applied`,
    });
  cp.inbox = [];
  cp.phase = 'run_end';
  applyCommonCommands(draft, runPhaseHooks(draft, 'run_end'));
  cp.state = dropEphemeral(draft.ctx.registry, cp.state);
  cp.termination = reason;
  cp.inbox = [];
  cp.inference = null;
  cp.finishedAt = draft.now;
  draft.setRunStatus(terminationToRunStatus(reason));
  draft.emit({ type: 'run.finished', status: 'done', termination: reason, usage: { ...cp.usage } });
  draft.mark('run_finished');
  return draft;
}

/**
 * A run that waited behind another on its thread was created with an old view of the thread;
 * before it starts, its history and thread state are replaced by the thread's current ones.
 */
export function rebaseOnThread(
  cp: Checkpoint,
  history: readonly Message[],
  threadState: Record<string, JsonValue>,
): Checkpoint {
  if (cp.status !== 'created') return cp;
  // The thread has not moved since the run was created (the common case: it was not queued):
  // its messages stay the very objects they are, so the store sees them as already written.
  const unchanged =
    history.length === cp.historyLength && history.every((m, i) => m.id === cp.messages[i]?.id);
  const own = cp.messages.slice(cp.historyLength);
  return {
    ...cp,
    messages: unchanged ? cp.messages : [...history, ...own],
    historyLength: history.length,
    state: { run: cp.state.run, thread: { ...cp.state.thread, ...threadState } },
  };
}
