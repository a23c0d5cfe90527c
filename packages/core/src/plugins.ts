import type {
  Checkpoint,
  Decision,
  Message,
  Phase,
  StatePatch,
  TerminationReason,
  ToolCallRef,
  ToolCallState,
  ToolResult,
  SuspendTicket,
} from '@baton/protocol';
import type { InferenceParams, InferenceResponse } from './model.ts';
import type { StateView } from './tools.ts';

type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** Hooks never mutate: they read a frozen snapshot and return commands the engine applies. */
export interface HookContext {
  readonly checkpoint: DeepReadonly<Checkpoint>;
  readonly state: StateView;
  readonly now: number;
}

export type PatchState = { readonly kind: 'patch_state'; readonly patches: readonly StatePatch[] };
/** Appended to the thread (persisted), e.g. a note the model must see from now on. */
export type AddMessage = {
  readonly kind: 'add_message';
  readonly message: { readonly role: 'system' | 'user'; readonly content: string };
};
export type Terminate = { readonly kind: 'terminate'; readonly reason: TerminationReason };
/** Context for this inference only; not persisted to the thread. */
export type AddContext = { readonly kind: 'add_context'; readonly content: string };
export type SetParams = { readonly kind: 'set_params'; readonly params: InferenceParams };
export type FilterTools = {
  readonly kind: 'filter_tools';
  readonly include?: readonly string[];
  readonly exclude?: readonly string[];
};
export type SkipInference = { readonly kind: 'skip_inference' };
export type EditToolCalls = {
  readonly kind: 'edit_tool_calls';
  readonly toolCalls: readonly ToolCallRef[];
};
export type SubmitDecision = { readonly kind: 'decision'; readonly decision: Decision };

/** Which commands each phase may return: a hook returning anything else does not compile. */
export interface PhaseCommands {
  run_start: PatchState | AddMessage | Terminate;
  step_start: PatchState | Terminate;
  before_inference: PatchState | AddContext | SetParams | FilterTools | SkipInference | Terminate;
  after_inference: PatchState | EditToolCalls | Terminate;
  before_tool_execute: PatchState;
  after_tool_execute: PatchState | AddMessage | Terminate | SubmitDecision;
  step_end: PatchState | Terminate;
  run_end: PatchState;
}

export type GateDecision =
  | { readonly kind: 'allow' }
  | { readonly kind: 'block'; readonly reason: string; readonly terminateRun?: boolean }
  | { readonly kind: 'suspend'; readonly ticket: SuspendTicket }
  | { readonly kind: 'set_result'; readonly result: ToolResult };

export interface GateContext extends HookContext {
  readonly call: DeepReadonly<ToolCallState>;
  /** True when the call is being replayed after a resume decision. */
  readonly resuming: boolean;
}

export interface AfterInferenceContext extends HookContext {
  readonly response: InferenceResponse;
}

export interface ToolHookContext extends HookContext {
  readonly call: DeepReadonly<ToolCallState>;
}

export interface HookContexts {
  run_start: HookContext;
  step_start: HookContext;
  before_inference: HookContext;
  after_inference: AfterInferenceContext;
  before_tool_execute: ToolHookContext;
  after_tool_execute: ToolHookContext;
  step_end: HookContext;
  run_end: HookContext;
}

export type CommandPhase = keyof PhaseCommands;

export type PluginHooks = {
  readonly [P in CommandPhase]?: (ctx: HookContexts[P]) => readonly PhaseCommands[P][] | undefined;
} & {
  readonly tool_gate?: (ctx: GateContext) => GateDecision | undefined;
};

/**
 * Hooks into a run's phases. A phase hook returns commands (patch state, terminate, inject a
 * message…) that the engine applies in plugin order; `tool_gate` may allow, block, suspend or
 * answer a tool call (Block > Suspend > SetResult > Allow when plugins disagree). Hooks are pure:
 * they read the context and return commands, and run again on replay.
 *
 * @example
 * ```ts
 * import type { Plugin } from '@baton/core';
 *
 * // Asks a human before any tool whose name starts with "delete_".
 * const guard: Plugin = {
 *   name: 'guard-deletes',
 *   hooks: {
 *     tool_gate: ({ call, resuming }) =>
 *       call.name.startsWith('delete_') && !resuming
 *         ? {
 *             kind: 'suspend',
 *             ticket: {
 *               reason: 'approval',
 *               message: `Run ${call.name}?`,
 *               resumeMode: 'replay_tool_call',
 *             },
 *           }
 *         : undefined,
 *   },
 * };
 * ```
 */
export interface Plugin {
  /** Shown in logs and events that name the plugin. */
  readonly name: string;
  /** One function per phase it hooks; phases left out are not hooked. */
  readonly hooks: PluginHooks;
}

// Compile-time check that the hook map covers exactly the nine phases.
type _AllPhasesCovered = Exclude<Phase, CommandPhase | 'tool_gate'> extends never ? true : never;
export const ALL_PHASES_COVERED: _AllPhasesCovered = true;

const GATE_PRIORITY: { readonly [K in GateDecision['kind']]: number } = {
  block: 3,
  suspend: 2,
  set_result: 1,
  allow: 0,
};

/** When hooks disagree: Block > Suspend > SetResult > Allow; ties keep the first plugin's answer. */
export function combineGateDecisions(
  decisions: readonly (GateDecision | undefined)[],
): GateDecision {
  let best: GateDecision = { kind: 'allow' };
  for (const d of decisions) {
    if (d && GATE_PRIORITY[d.kind] > GATE_PRIORITY[best.kind]) best = d;
  }
  return best;
}

export function runHooks<P extends CommandPhase>(
  plugins: readonly Plugin[],
  phase: P,
  ctx: HookContexts[P],
): PhaseCommands[P][] {
  const out: PhaseCommands[P][] = [];
  for (const plugin of plugins) {
    const hook = plugin.hooks[phase] as
      ((c: HookContexts[P]) => readonly PhaseCommands[P][] | undefined) | undefined;
    const commands = hook?.(ctx);
    if (commands) out.push(...commands);
  }
  return out;
}

export type { Message };
