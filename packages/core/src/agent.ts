import type { DecisionReplayPolicy, ExecutionMode, StopCondition } from '@baton/protocol';
import type { ModelPort } from './model.ts';
import type { ModelRetryPolicy } from './model-retry.ts';
import type { Plugin } from './plugins.ts';
import type { StateKeyDefinition } from './state-keys.ts';
import type { ToolDefinition } from './tools.ts';

/** The data part of an agent: what the API needs to create runs without importing agent code. */
export interface AgentSpec {
  readonly name: string;
  readonly description?: string;
  readonly systemPrompt?: string;
  readonly stateKeys?: readonly StateKeyDefinition[];
  /** Default mode; a run may override it. */
  readonly executionMode?: ExecutionMode;
  /** Overrides the mode's default replay policy. */
  readonly replayPolicy?: DecisionReplayPolicy;
  readonly stopConditions?: readonly StopCondition[];
}

export interface AgentDefinition extends AgentSpec {
  readonly model: ModelPort;
  readonly tools: readonly ToolDefinition[];
  readonly plugins?: readonly Plugin[];
  /** Retries of failed model calls; unset fields take DEFAULT_MODEL_RETRY's. */
  readonly modelRetry?: Partial<ModelRetryPolicy>;
}

/** The seed's mapping of mode to replay policy (Sequential has none; Immediate is harmless there). */
export function defaultReplayPolicy(mode: ExecutionMode): DecisionReplayPolicy {
  return mode === 'parallel_batch_approval' ? 'batch_all_suspended' : 'immediate';
}

export interface ExecutionModeTraits {
  readonly concurrent: boolean;
  readonly refreshesStateBetweenCalls: boolean;
  readonly stopsOnSuspension: boolean;
  readonly stopsOnFailure: boolean;
  readonly conflictChecks: boolean;
}

/** One row per mode of the seed's comparison table. */
export const EXECUTION_MODE_TRAITS: { readonly [M in ExecutionMode]: ExecutionModeTraits } = {
  sequential: {
    concurrent: false,
    refreshesStateBetweenCalls: true,
    stopsOnSuspension: true,
    stopsOnFailure: false,
    conflictChecks: false,
  },
  parallel_batch_approval: {
    concurrent: true,
    refreshesStateBetweenCalls: false,
    stopsOnSuspension: false,
    stopsOnFailure: false,
    conflictChecks: true,
  },
  parallel_streaming: {
    concurrent: true,
    refreshesStateBetweenCalls: false,
    stopsOnSuspension: false,
    stopsOnFailure: false,
    conflictChecks: true,
  },
};
