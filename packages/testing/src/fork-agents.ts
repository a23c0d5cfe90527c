import type { AgentDefinition, ToolDefinition } from '@baton/core';
import { ScriptedModel, defineTool, toolResult } from '@baton/core';
import type { ExecutionMode, RunEvent } from '@baton/protocol';
import { z } from 'zod';

/**
 * Agents for fork and replay tests: step 1 calls A and B (plain) and C (approval-gated), step 2
 * calls D, step 3 answers. Every execution is counted per run and call (`probe`), so a test
 * can tell whether a fork ran a call again.
 */
export class ToolProbe {
  private readonly counts = new Map<string, number>();

  count(runId: string, callId: string): number {
    return this.counts.get(`${runId}/${callId}`) ?? 0;
  }

  hit(runId: string, callId: string): void {
    const key = `${runId}/${callId}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
}

function probeTool(probe: ToolProbe, name: string, approval: boolean): ToolDefinition {
  return defineTool({
    name,
    description: `${name}: counted`,
    inputSchema: z.looseObject({}),
    ...(approval ? { approval: { message: `run ${name}?` } } : {}),
    execute: async (_args, ctx) => {
      probe.hit(ctx.identity.runId, ctx.toolCallId);
      return toolResult.success({ tool: name });
    },
  });
}

export const FORK_AGENTS: readonly (readonly [string, ExecutionMode])[] = [
  ['fork-parallel', 'parallel_streaming'],
  ['fork-sequential', 'sequential'],
];

export function forkAgents(probe: ToolProbe): AgentDefinition[] {
  const tools = [
    probeTool(probe, 'a', false),
    probeTool(probe, 'b', false),
    probeTool(probe, 'c', true),
    probeTool(probe, 'd', false),
  ];
  return FORK_AGENTS.map(([name, mode]) => ({
    name,
    executionMode: mode,
    tools,
    model: new ScriptedModel((request) => {
      if (request.step === 1)
        return {
          text: 'first',
          toolCalls: [
            { id: 'A', name: 'a' },
            { id: 'B', name: 'b' },
            { id: 'C', name: 'c' },
          ],
        };
      if (request.step === 2) return { text: 'second', toolCalls: [{ id: 'D', name: 'd' }] };
      return { text: `done after ${String(request.messages.length)} messages` };
    }),
  }));
}

/** The calls whose result is in the log at or before seq: a fork there must not run them again. */
export function callsSettledBy(events: readonly RunEvent[], seq: number): string[] {
  const ids = new Set<string>();
  for (const e of events) if (e.seq <= seq && e.type === 'tool_call.result') ids.add(e.toolCallId);
  return [...ids];
}

/** The event without its envelope: what must be equal, byte for byte, in a fork's prefix. */
export function bodyJson(e: RunEvent): string {
  const { seq: _s, runId: _r, threadId: _t, turnId: _u, at: _a, ...body } = e;
  return JSON.stringify(body);
}
