import { z } from 'zod';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';

const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  inputSchema: z.object({ i: z.number().optional() }),
  execute: async () => toolResult.success(null),
});

/** Benchmark agent: 3 steps, 2 parallel no-op tools in each of the first two, instant model. */
export function benchAgents(): AgentDefinition[] {
  const round = {
    toolCalls: [
      { name: 'noop', arguments: { i: 1 } },
      { name: 'noop', arguments: { i: 2 } },
    ],
  };
  return [
    {
      name: 'bench',
      model: new ScriptedModel([round, round, { text: 'done' }]),
      tools: [noop],
      executionMode: 'parallel_streaming',
    },
    {
      name: 'bench-sequential',
      model: new ScriptedModel([round, round, { text: 'done' }]),
      tools: [noop],
      executionMode: 'sequential',
    },
  ];
}
