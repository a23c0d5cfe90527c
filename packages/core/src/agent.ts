import type {
  DeadlinePolicy,
  DecisionReplayPolicy,
  ExecutionMode,
  StopCondition,
  Versioning,
} from '@baton/protocol';
import type { ModelPort } from './model.ts';
import type { ModelRetryPolicy } from './model-retry.ts';
import type { Plugin } from './plugins.ts';
import type { StateKeyDefinition } from './state-keys.ts';
import type { ToolDefinition } from './tools.ts';

/** The data part of an agent: what the API needs to create runs without importing agent code. */
export interface AgentSpec {
  /** The name runs ask for (`POST /v1/runs { agent }`); one worker queue per name. */
  readonly name: string;
  /** Shown by `GET /v1/agents`. */
  readonly description?: string;
  /** Sent to the model before the conversation. */
  readonly systemPrompt?: string;
  /**
   * The run's shared state keys and how concurrent writes to each merge.
   *
   * @default [] (no state keys)
   */
  readonly stateKeys?: readonly StateKeyDefinition[];
  /**
   * Default mode; a run may override it.
   *
   * @default 'sequential'
   */
  readonly executionMode?: ExecutionMode;
  /**
   * Overrides the mode's default replay policy.
   *
   * @default 'batch_all_suspended' in parallel_batch_approval, else 'immediate'
   */
  readonly replayPolicy?: DecisionReplayPolicy;
  /**
   * Conditions that end a run early; a run's own replace these.
   *
   * @default [] (a run ends when the model answers without tool calls)
   */
  readonly stopConditions?: readonly StopCondition[];
  /**
   * Deadline of the agent's waiting calls whose tool sets none (a run's own replaces it).
   *
   * @default undefined (calls wait until decided or cancelled)
   */
  readonly deadline?: DeadlinePolicy;
  /**
   * This definition's version (letters, digits, '.', '_', '-'; at most 64): runs created on it
   * run every step on workers that serve it. Unset: derived from the definition's content
   * (docs/deployment-and-scaling.md "Agent versions" lists what goes in).
   */
  readonly version?: string;
  /**
   * 'pinned': a run stays on the version it was created on. 'auto-upgrade': each next step of a
   * run goes to the agent's current version (for changes compatible with runs in flight).
   *
   * @default 'pinned'
   */
  readonly versioning?: Versioning;
}

/**
 * An agent a worker runs: its spec (name, prompt, mode, stop conditions), the model it calls, its
 * tools and plugins. Give workers the same definitions by name; the API only sees the spec.
 *
 * @example
 * ```ts
 * import { openai } from '@ai-sdk/openai';
 * import { AiSdkModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
 * import { z } from 'zod';
 *
 * const lookup = defineTool({
 *   name: 'lookup_order',
 *   description: 'Finds an order by id',
 *   inputSchema: z.object({ orderId: z.string() }),
 *   execute: async ({ orderId }) => toolResult.success({ orderId, status: 'shipped' }),
 * });
 *
 * export const support: AgentDefinition = {
 *   name: 'support',
 *   systemPrompt: 'You answer questions about orders.',
 *   model: new AiSdkModel(openai('gpt-4.1')),
 *   tools: [lookup],
 *   stopConditions: [{ type: 'max_rounds', rounds: 10 }],
 * };
 * ```
 */
export interface AgentDefinition extends AgentSpec {
  /** The model each step calls (any AI SDK model through AiSdkModel, or your own ModelPort). */
  readonly model: ModelPort;
  /** The tools the model may call; each name once. */
  readonly tools: readonly ToolDefinition[];
  /**
   * Hooks into the run's phases, in this order (see {@link Plugin}).
   *
   * @default []
   */
  readonly plugins?: readonly Plugin[];
  /**
   * Retries of failed model calls; unset fields take DEFAULT_MODEL_RETRY's.
   *
   * @default { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 30_000, callTimeoutMs: 120_000 }
   */
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
