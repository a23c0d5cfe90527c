/**
 * Type tests (vitest typecheck, unit project): which commands each phase's hooks may return is
 * the contract plugins are written against, and it holds at compile time only.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { Decision, Phase } from '@baton/protocol';
import type { CommandPhase, GateDecision, HookContexts, PhaseCommands, Plugin } from './plugins.ts';
import type { runHooks } from './plugins.ts';

/** The phases whose hooks may return a command of this kind. */
type PhasesAllowing<K extends string> = {
  [P in CommandPhase]: Extract<PhaseCommands[P], { readonly kind: K }> extends never ? never : P;
}[CommandPhase];

describe('PhaseCommands', () => {
  it('lists, phase by phase, exactly the commands a hook may return', () => {
    expectTypeOf<{ [P in CommandPhase]: PhaseCommands[P]['kind'] }>().toEqualTypeOf<{
      run_start: 'patch_state' | 'add_message' | 'terminate';
      step_start: 'patch_state' | 'terminate';
      before_inference:
        | 'patch_state'
        | 'add_context'
        | 'set_params'
        | 'filter_tools'
        | 'skip_inference'
        | 'terminate';
      after_inference: 'patch_state' | 'edit_tool_calls' | 'terminate';
      before_tool_execute: 'patch_state';
      after_tool_execute: 'patch_state' | 'add_message' | 'terminate' | 'decision';
      step_end: 'patch_state' | 'terminate';
      run_end: 'patch_state';
    }>();
  });

  it('gives each phase-specific command to its phase only', () => {
    expectTypeOf<PhasesAllowing<'skip_inference'>>().toEqualTypeOf<'before_inference'>();
    expectTypeOf<PhasesAllowing<'edit_tool_calls'>>().toEqualTypeOf<'after_inference'>();
    expectTypeOf<PhasesAllowing<'add_context'>>().toEqualTypeOf<'before_inference'>();
    expectTypeOf<PhasesAllowing<'set_params'>>().toEqualTypeOf<'before_inference'>();
    expectTypeOf<PhasesAllowing<'filter_tools'>>().toEqualTypeOf<'before_inference'>();
    expectTypeOf<PhasesAllowing<'decision'>>().toEqualTypeOf<'after_tool_execute'>();
    expectTypeOf<PhasesAllowing<'add_message'>>().toEqualTypeOf<
      'run_start' | 'after_tool_execute'
    >();
    // Every phase may patch state; the run's last phase and a tool's gate-side phase may not end it.
    expectTypeOf<PhasesAllowing<'patch_state'>>().toEqualTypeOf<CommandPhase>();
    expectTypeOf<PhasesAllowing<'terminate'>>().toEqualTypeOf<
      Exclude<CommandPhase, 'before_tool_execute' | 'run_end'>
    >();
  });

  it('covers every phase of the protocol: the command phases and the tool gate', () => {
    expectTypeOf<CommandPhase | 'tool_gate'>().toEqualTypeOf<Phase>();
    expectTypeOf<keyof HookContexts>().toEqualTypeOf<CommandPhase>();
  });

  it('rejects a hook that returns a command of another phase', () => {
    const ok: Plugin = {
      name: 'ok',
      hooks: {
        before_inference: () => [{ kind: 'skip_inference' }],
        after_inference: (ctx) => [{ kind: 'edit_tool_calls', toolCalls: ctx.response.toolCalls }],
        tool_gate: () => ({ kind: 'allow' }),
      },
    };
    expectTypeOf(ok).toExtend<Plugin>();

    const decision: Decision = { decisionId: 'd1', toolCallId: 'c1', action: 'resume' };
    const fromTool: Plugin = {
      name: 'tool',
      hooks: { after_tool_execute: () => [{ kind: 'decision', decision }] },
    };
    expectTypeOf(fromTool).toExtend<Plugin>();

    const wrong: Plugin = {
      name: 'wrong',
      hooks: {
        // @ts-expect-error skip_inference is BeforeInference's alone
        after_inference: () => [{ kind: 'skip_inference' }],
        // @ts-expect-error edit_tool_calls is AfterInference's alone
        before_inference: () => [{ kind: 'edit_tool_calls', toolCalls: [] }],
        // @ts-expect-error a tool's BeforeToolExecute hook may not end the run
        before_tool_execute: () => [{ kind: 'terminate', reason: { kind: 'natural_end' } }],
        // @ts-expect-error decisions come from AfterToolExecute only
        step_end: () => [{ kind: 'decision', decision }],
        // @ts-expect-error the tool gate answers a GateDecision, not commands
        tool_gate: () => [{ kind: 'patch_state', patches: [] }],
      },
    };
    expectTypeOf(wrong).toExtend<Plugin>();
  });

  it('hands the engine what the phase allows', () => {
    expectTypeOf<ReturnType<typeof runHooks<'after_inference'>>>().toEqualTypeOf<
      PhaseCommands['after_inference'][]
    >();
    expectTypeOf<GateDecision['kind']>().toEqualTypeOf<
      'allow' | 'block' | 'suspend' | 'set_result'
    >();
  });
});
