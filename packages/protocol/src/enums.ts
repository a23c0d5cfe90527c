import { z } from 'zod';

/** Run-level lifecycle (seed v3: Created was added before Running). */
export const RunStatusSchema = z.enum(['created', 'running', 'waiting', 'done']);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** Per-tool-call lifecycle, tracked independently of the run. */
export const ToolCallStatusSchema = z.enum([
  'new',
  'running',
  'suspended',
  'resuming',
  'succeeded',
  'failed',
  'cancelled',
]);
export type ToolCallStatus = z.infer<typeof ToolCallStatusSchema>;

/** The nine phases of seed v3, in execution order. */
export const PhaseSchema = z.enum([
  'run_start',
  'step_start',
  'before_inference',
  'after_inference',
  'tool_gate',
  'before_tool_execute',
  'after_tool_execute',
  'step_end',
  'run_end',
]);
export type Phase = z.infer<typeof PhaseSchema>;

export const ExecutionModeSchema = z.enum([
  'sequential',
  'parallel_batch_approval',
  'parallel_streaming',
]);
export type ExecutionMode = z.infer<typeof ExecutionModeSchema>;

export const DecisionReplayPolicySchema = z.enum(['immediate', 'batch_all_suspended']);
export type DecisionReplayPolicy = z.infer<typeof DecisionReplayPolicySchema>;

export const ResumeModeSchema = z.enum([
  'replay_tool_call',
  'use_decision_as_tool_result',
  'pass_decision_to_tool',
]);
export type ResumeMode = z.infer<typeof ResumeModeSchema>;

/** What a new run does when its thread already has an active run. */
export const MultitaskStrategySchema = z.enum(['reject', 'enqueue', 'interrupt']);
export type MultitaskStrategy = z.infer<typeof MultitaskStrategySchema>;

/** Why a checkpoint was committed (seed v1's six triggers). */
export const CheckpointTriggerSchema = z.enum([
  'user_message',
  'run_start_replay',
  'assistant_turn_committed',
  'tool_results_committed',
  'decision_replay',
  'run_finished',
]);
export type CheckpointTrigger = z.infer<typeof CheckpointTriggerSchema>;
