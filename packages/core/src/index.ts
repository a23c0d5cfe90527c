export * from './agent.ts';
export * from './clock.ts';
export * from './errors.ts';
export * from './model.ts';
export * from './model-retry.ts';
export * from './model-call-retry.ts';
export * from './own.ts';
export * from './plugins.ts';
export * from './ports.ts';
export * from './run-status.ts';
export * from './state-keys.ts';
export * from './stop-conditions.ts';
export * from './tool-call-status.ts';
export * from './tools.ts';
export { Engine, runCommands, type Transition } from './engine/engine.ts';
export { composeTransitions } from './engine/compose-transitions.ts';
export type { EngineContext } from './engine/context.ts';
export { executeTool, type ExecuteToolOptions } from './engine/execute-tool.ts';
export { assistantMessageId, buildInferenceRequest } from './engine/inference.ts';
export { inputMessageId, rebaseOnThread, type CreateRunInput } from './engine/lifecycle.ts';
export { plan, type Plan } from './engine/plan.ts';
export { activityOf, type Activity } from './engine/activity.ts';
export {
  applicableDecisions,
  roundState,
  suspendedCalls,
  type RoundState,
} from './engine/round-state.ts';
export { idempotencyKey, invocationFor, type ToolInvocation } from './engine/tool-round.ts';
export { toolMessageFor, toolMessageId, toolResultContent } from './engine/tool-messages.ts';
export {
  childParentOf,
  childRunOutcome,
  childRunResult,
  childStartFailure,
  linkedChildRuns,
  runningChildCalls,
} from './engine/child-runs.ts';
export { ScriptedModel, type Script, type ScriptedTurn } from './model/scripted-model.ts';
export {
  InProcessRunner,
  type InProcessRunnerOptions,
  type StartRunRequest,
} from './runner/in-process-runner.ts';
export { MemoryRunStore, MemoryThreadStore, type CommitRecord } from './runner/memory-store.ts';
export { deferred, type Deferred } from './runner/deferred.ts';
export { applyEvent, emptySnapshot, foldSnapshot } from './snapshot.ts';
export {
  AiSdkModel,
  INVALID_JSON_ARGUMENTS_KEY,
  parseArguments,
  type AiSdkLanguageModel,
  type AiSdkModelOptions,
} from './model/ai-sdk-model.ts';
export type { AiSdkTelemetry, TelemetrySpan, TelemetryTracer } from './model/model-telemetry.ts';
