import type { JsonValue, ToolCallState } from '@baton/protocol';
import type { InferenceRequest, InferenceResponse } from '../model.ts';
import { loopHistoryLimit, toolCallSignature } from '../stop-conditions.ts';
import { describeTool } from '../tools.ts';
import type { Draft } from './draft.ts';
import { applyCommonCommands, finishRun, runPhaseHooks } from './lifecycle.ts';
import { endStep } from './step-end.ts';

export function assistantMessageId(runId: string, step: number): string {
  return `${runId}:step:${step}`;
}

/** StepStart + BeforeInference: prepares (durably) what the model will be asked. */
export function beginStep(draft: Draft): Draft {
  const { cp } = draft;
  cp.step += 1;
  cp.phase = 'step_start';
  cp.calls = {};
  cp.round = [];
  cp.counters.lastStepTools = [];
  draft.emit({ type: 'step.started', step: cp.step });
  const startTermination = applyCommonCommands(draft, runPhaseHooks(draft, 'step_start'));
  if (startTermination) return finishRun(draft, startTermination);

  cp.phase = 'before_inference';
  const context: string[] = [];
  let params: Record<string, JsonValue> = {};
  let tools = [...draft.ctx.tools.keys()];
  let skip = false;
  let termination = null;
  for (const command of runPhaseHooks(draft, 'before_inference')) {
    switch (command.kind) {
      case 'add_context':
        context.push(command.content);
        break;
      case 'set_params':
        params = { ...params, ...(command.params as Record<string, JsonValue>) };
        break;
      case 'filter_tools': {
        const { include, exclude } = command;
        if (include) tools = tools.filter((t) => include.includes(t));
        if (exclude) tools = tools.filter((t) => !exclude.includes(t));
        break;
      }
      case 'skip_inference':
        skip = true;
        break;
      case 'terminate':
        termination ??= command.reason;
        break;
      case 'patch_state':
        draft.applyStatePatches(command.patches);
        break;
    }
  }
  if (termination) return finishRun(draft, termination);
  if (skip) return finishRun(draft, { kind: 'behavior_requested' });
  cp.inference = { context, params, tools };
  return draft;
}

export function buildInferenceRequest(draft: Pick<Draft, 'cp' | 'ctx'>): InferenceRequest {
  const { cp, ctx } = draft;
  const prepared = cp.inference ?? { context: [], params: {}, tools: [...ctx.tools.keys()] };
  const contextMessages = prepared.context.map((content, i) => ({
    id: `${cp.identity.runId}:ctx:${cp.step}:${i}`,
    role: 'system' as const,
    content,
  }));
  return {
    runId: cp.identity.runId,
    step: cp.step,
    messageId: assistantMessageId(cp.identity.runId, cp.step),
    ...(ctx.agent.systemPrompt === undefined ? {} : { system: ctx.agent.systemPrompt }),
    messages: [...cp.messages, ...contextMessages],
    tools: prepared.tools.flatMap((name) => {
      const tool = ctx.tools.get(name);
      return tool ? [describeTool(tool)] : [];
    }),
    params: prepared.params,
  };
}

/** AfterInference + assistant commit (trigger AssistantTurnCommitted); opens the tool round. */
export function commitInference(draft: Draft, response: InferenceResponse): Draft {
  const { cp } = draft;
  cp.phase = 'after_inference';
  cp.inference = null;
  cp.usage = {
    inputTokens: cp.usage.inputTokens + response.usage.inputTokens,
    outputTokens: cp.usage.outputTokens + response.usage.outputTokens,
    totalTokens: cp.usage.totalTokens + response.usage.totalTokens,
  };
  let toolCalls = response.toolCalls;
  let termination = null;
  if (draft.ctx.plugins.some((p) => p.hooks.after_inference)) {
    const commands = runPhaseHooks(draft, 'after_inference', { response });
    for (const command of commands) {
      if (command.kind === 'edit_tool_calls') toolCalls = command.toolCalls;
      else if (command.kind === 'terminate') termination ??= command.reason;
      else draft.applyStatePatches(command.patches);
    }
  }
  const message = {
    id: assistantMessageId(cp.identity.runId, cp.step),
    role: 'assistant' as const,
    content: response.text,
    ...(response.reasoning ? { reasoning: response.reasoning } : {}),
    toolCalls: toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
  };
  cp.messages.push(message);
  draft.emit({ type: 'message.assistant', step: cp.step, message });
  draft.mark('assistant_turn_committed');
  if (termination) return finishRun(draft, termination);
  if (toolCalls.length === 0) return endStep(draft, { naturalEnd: true, lastText: response.text });

  const limit = loopHistoryLimit(cp.stopConditions);
  toolCalls.forEach((ref, index) => {
    const call: ToolCallState = {
      id: ref.id,
      name: ref.name,
      arguments: ref.arguments,
      step: cp.step,
      index,
      status: 'new',
      attempt: 0,
      createdAt: draft.now,
    };
    cp.calls[call.id] = call;
    cp.round.push(call.id);
    cp.counters.lastStepTools.push(call.name);
    if (limit > 0) cp.counters.recentToolCalls.push(toolCallSignature(call.name, call.arguments));
    draft.emit({
      type: 'tool_call.created',
      step: cp.step,
      toolCallId: call.id,
      toolName: call.name,
      arguments: call.arguments,
      index,
    });
  });
  if (cp.counters.recentToolCalls.length > limit)
    cp.counters.recentToolCalls = cp.counters.recentToolCalls.slice(-limit);
  cp.phase = 'tool_gate';
  return draft;
}
