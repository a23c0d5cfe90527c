import {
  DecisionReplayPolicySchema,
  ExecutionModeSchema,
  ResumeModeSchema,
  type DecisionReplayPolicy,
  type ExecutionMode,
  type JsonValue,
  type ResumeMode,
} from '@baton/protocol';
import { z } from 'zod';
import type { AgentDefinition } from '../agent.ts';
import { ScriptedModel } from '../model/scripted-model.ts';
import { defineTool, toolResult, type ToolDefinition } from '../tools.ts';

/** A tool that suspends with the given resume mode and reports how it was resumed. */
export function suspendingTool(name: string, mode: ResumeMode): ToolDefinition {
  const input = z.looseObject({ value: z.string().optional() });
  switch (mode) {
    case 'replay_tool_call':
      return defineTool({
        name,
        description: `${name}: approval-gated, replays with its original arguments`,
        inputSchema: input,
        approval: { message: `Run ${name}?` },
        execute: async (args, ctx) =>
          toolResult.success({
            tool: name,
            args: args as JsonValue,
            attempt: ctx.attempt,
            resumed: ctx.resume !== undefined,
          }),
      });
    case 'use_decision_as_tool_result':
      return defineTool({
        name,
        description: `${name}: client-side, the decision payload is its result`,
        inputSchema: input,
        clientSide: { message: `Run ${name} in the client` },
      });
    case 'pass_decision_to_tool':
      return defineTool({
        name,
        description: `${name}: asks for input, then runs with the decision as its arguments`,
        inputSchema: input,
        resumeMode: 'pass_decision_to_tool',
        execute: async (args, ctx) =>
          ctx.resume
            ? toolResult.success({ tool: name, args: args as JsonValue, attempt: ctx.attempt })
            : toolResult.pending({
                reason: 'input',
                message: `${name} needs a value`,
                resumeMode: 'pass_decision_to_tool',
                responseSchema: {
                  type: 'object',
                  properties: { value: { type: 'string' } },
                  required: ['value'],
                },
              }),
      });
  }
}

export const echo = defineTool({
  name: 'echo',
  description: 'echoes its input',
  inputSchema: z.looseObject({ value: z.string().optional() }),
  execute: async (args) => toolResult.success({ echoed: args.value ?? null }),
});

export const failing = defineTool({
  name: 'failing',
  description: 'always returns an error result',
  inputSchema: z.object({}),
  execute: async () => toolResult.error('this tool always fails'),
});

/** Payload the scenario decider sends for each resume mode. */
export function payloadFor(mode: ResumeMode): JsonValue | undefined {
  if (mode === 'use_decision_as_tool_result') return { answer: 'yes' };
  if (mode === 'pass_decision_to_tool') return { value: 'from-decision' };
  return undefined;
}

export function matrixAgentName(
  mode: ExecutionMode,
  policy: DecisionReplayPolicy,
  resume: ResumeMode,
): string {
  return `matrix:${mode}:${policy}:${resume}`;
}

/**
 * Round 1 calls [S1 (suspends), echo, S2 (suspends)], round 2 ends naturally. One agent per
 * mode x policy x resume mode, shared by the in-process and the distributed suites.
 */
/** Every execution mode × replay policy × resume mode, in a stable order. */
export const MATRIX_CASES: readonly (readonly [ExecutionMode, DecisionReplayPolicy, ResumeMode])[] =
  ExecutionModeSchema.options.flatMap((mode) =>
    DecisionReplayPolicySchema.options.flatMap((policy) =>
      ResumeModeSchema.options.map((resume) => [mode, policy, resume] as const),
    ),
  );

export function matrixAgents(): AgentDefinition[] {
  const agents: AgentDefinition[] = [];
  for (const [mode, policy, resume] of MATRIX_CASES)
    agents.push({
      name: matrixAgentName(mode, policy, resume),
      model: new ScriptedModel([
        {
          text: 'working',
          toolCalls: [
            { id: 'S1', name: 's1', arguments: { value: 'one' } },
            { id: 'E', name: 'echo', arguments: { value: 'middle' } },
            { id: 'S2', name: 's2', arguments: { value: 'two' } },
          ],
        },
        { text: 'finished' },
      ]),
      tools: [suspendingTool('s1', resume), echo, suspendingTool('s2', resume)],
      executionMode: mode,
      replayPolicy: policy,
    });
  return agents;
}
