/**
 * `@baton/core`'s public surface, listed name by name (knip fails the lint on a name nothing
 * outside the package imports unless it says @public): the engine, the agent, tool, plugin and
 * model contracts, the ports a store implements, and the in-process runner.
 */
export type { AgentDefinition, AgentSpec } from './agent.ts';
export { ManualClock } from './clock.ts';
export { BatonError, RunDoneError, UnknownAgentError, VersionConflictError } from './errors.ts';
/** @public The errors core throws at its callers, and the codes they carry. */
export {
  type BatonErrorCode,
  DecisionError,
  IllegalTransitionError,
  isBatonError,
  ModelCallTimeoutError,
  StatePatchError,
  ToolSchemaMissingError,
  ValidationError,
} from './errors.ts';
export {
  InferenceAccumulator,
  type InferenceRequest,
  type InferenceResponse,
  type ModelPort,
  type ModelStreamPart,
} from './model.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type { InferenceParams } from './model.ts';
export { modelRetryPolicy } from './model-retry.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export { DEFAULT_MODEL_RETRY, type ModelErrorClass, type ModelRetryPolicy } from './model-retry.ts';
export { retryingModelCall } from './model-call-retry.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type { ModelRetryNotice } from './model-call-retry.ts';

/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type {
  AddContext,
  AddMessage,
  AfterInferenceContext,
  CommandPhase,
  EditToolCalls,
  FilterTools,
  GateContext,
  GateDecision,
  HookContext,
  HookContexts,
  Message,
  PatchState,
  PhaseCommands,
  Plugin,
  PluginHooks,
  SetParams,
  SkipInference,
  SubmitDecision,
  Terminate,
  ToolHookContext,
} from './plugins.ts';
export type {
  ArchivedRun,
  ArchivedRunSummary,
  ArchivedThread,
  ArchiveListQuery,
  Clock,
  CommitResult,
  RunArchive,
  RunListFilters,
  RunStore,
  StoredCheckpoint,
} from './ports.ts';

export {
  applyPatches,
  buildKeyRegistry,
  type KeyRegistry,
  persistentThreadState,
  type Reducer,
} from './state-keys.ts';

export {
  agentTool,
  defineTool,
  describeTool,
  normalizeToolReturn,
  type ToolContext,
  type ToolDefinition,
  sleepTool,
  toolResult,
} from './tools.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type {
  AgentToolOptions,
  AgentToolSpec,
  ApprovalSpec,
  StateView,
  ToolReturn,
  ToolWaitpoint,
} from './tools.ts';
export { waitForEventTool } from './wait-for-event.ts';
/** @public For agent authors: the built-in tool's default name and its options. */
export { WAIT_FOR_EVENT_TOOL, type WaitForEventToolOptions } from './wait-for-event.ts';
export { Engine, runCommands, type Transition } from './engine/engine.ts';
export { composeTransitions } from './engine/compose-transitions.ts';
export { firstForkSeq, forkCheckpoint, type ForkResult } from './engine/fork-checkpoint.ts';

export { executeTool } from './engine/execute-tool.ts';
export { assistantMessageId } from './engine/inference.ts';
export { rebaseOnThread } from './engine/lifecycle.ts';
export { plan } from './engine/plan.ts';
export { activityOf, type Activity } from './engine/activity.ts';
export type { DeadlineExpiry } from './engine/deadlines.ts';
export { applicableDecisions } from './engine/round-state.ts';
export { invocationFor, type ToolInvocation } from './engine/tool-round.ts';
export { toolMessageId, toolResultContent } from './engine/tool-messages.ts';
export {
  childParentOf,
  childRunResult,
  childStartFailure,
  linkedChildRuns,
} from './engine/child-runs.ts';
export { ScriptedModel, type ScriptedTurn } from './model/scripted-model.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type { Script } from './model/scripted-model.ts';
export { InProcessRunner } from './runner/in-process-runner.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type { InProcessRunnerOptions, StartRunRequest } from './runner/in-process-runner.ts';
export { MemoryRunStore } from './runner/memory-store.ts';

export { applyEvent, emptySnapshot, foldSnapshot } from './snapshot.ts';
export { AiSdkModel, type AiSdkLanguageModel } from './model/ai-sdk-model.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type { AiSdkModelOptions } from './model/ai-sdk-model.ts';
export type { AiSdkTelemetry } from './model/model-telemetry.ts';
/** @public For agent, plugin, tool and model authors: named in the public API's shapes. */
export type { TelemetrySpan, TelemetryTracer } from './model/model-telemetry.ts';
