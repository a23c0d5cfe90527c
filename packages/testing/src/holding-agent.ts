/**
 * An agent `holder` whose runs keep their fairness slot in a tool until the test lets go: one
 * round calling `hold`, which waits for `letGo()`, then an answer. Tests of admission use it to
 * keep runs queued behind a full window for as long as they look.
 */
import { z } from 'zod';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';

export function holdingAgent(): { readonly agent: AgentDefinition; readonly letGo: () => void } {
  let letGo: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (letGo = resolve));
  const agent: AgentDefinition = {
    name: 'holder',
    model: new ScriptedModel((request) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: 'let go' }
        : { toolCalls: [{ name: 'hold', arguments: {} }] },
    ),
    tools: [
      defineTool({
        name: 'hold',
        description: 'holds until the test lets go',
        inputSchema: z.object({}),
        execute: async () => {
          await gate;
          return toolResult.success({ ok: true });
        },
      }),
    ],
    executionMode: 'sequential',
  };
  return { agent, letGo: () => letGo() };
}
