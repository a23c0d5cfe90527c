import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import type { Clock } from '@baton/core';
import { z } from 'zod';

/** Name of the agent that plays the seed's parallel timeline (t0–t7). */
export const SEED_AGENT = 'seed-t0t7';
/** How long tool_C (the normal tool) runs. */
const TOOL_C_MS = 500;

/**
 * The seed's "parallel tool call state timeline" (awaken-run-lifecycle-v2, t0–t7): one round
 * calls [tool_A (approval), tool_B (approval), tool_C (normal, ~500 ms)] under ParallelStreaming;
 * the run waits once tool_C is done, resumes tool_A and tool_B one decision at a time, then ends
 * with a summary.
 */
export function seedAgent(clock: Clock): AgentDefinition {
  const gated = (name: string) =>
    defineTool({
      name,
      description: `${name}: approval-gated`,
      inputSchema: z.object({ target: z.string() }),
      approval: { message: (args) => `Run ${name} on ${JSON.stringify(args['target'])}?` },
      execute: async ({ target }) => toolResult.success({ tool: name, target, ok: true }),
    });
  const toolC = defineTool({
    name: 'tool_C',
    description: 'tool_C: a normal tool that takes a while',
    inputSchema: z.object({ target: z.string() }),
    execute: async ({ target }, ctx) => {
      await clock.sleep(TOOL_C_MS, ctx.signal);
      return toolResult.success({ tool: 'tool_C', target, ok: true });
    },
  });
  return {
    name: SEED_AGENT,
    description: 'Seed t0–t7: two approval-gated tools and a slow normal tool in parallel',
    model: new ScriptedModel((request) => {
      if (request.messages.at(-1)?.role === 'user')
        return {
          text: 'Running A, B and C.',
          toolCalls: [
            { name: 'tool_A', arguments: { target: 'alpha' } },
            { name: 'tool_B', arguments: { target: 'beta' } },
            { name: 'tool_C', arguments: { target: 'gamma' } },
          ],
        };
      const results = request.messages.filter((m) => m.role === 'tool');
      return { text: `All ${results.length} tools finished.` };
    }),
    tools: [gated('tool_A'), gated('tool_B'), toolC],
    executionMode: 'parallel_streaming',
    stopConditions: [{ type: 'max_rounds', rounds: 4 }],
  };
}

/** Name of the agent whose approved tool then runs for a while (a slow continuation). */
export const GATED_SLOW_AGENT = 'gated-slow';
const GATED_SLOW_MS = 1_500;

/** One approval-gated tool that runs ~1.5 s once approved, then a closing text. */
export function gatedSlowAgent(clock: Clock): AgentDefinition {
  const slowDeploy = defineTool({
    name: 'slow_deploy',
    description: 'Deploys slowly, after an approval',
    inputSchema: z.object({ target: z.string() }),
    approval: { message: (args) => `Deploy ${JSON.stringify(args['target'])}?` },
    execute: async ({ target }, ctx) => {
      await clock.sleep(GATED_SLOW_MS, ctx.signal);
      return toolResult.success({ target, deployed: true });
    },
  });
  return {
    name: GATED_SLOW_AGENT,
    description: 'An approval, then a slow tool: the continuation streams for a while',
    model: new ScriptedModel((request) =>
      request.messages.at(-1)?.role === 'user'
        ? {
            text: 'Deploying slowly.',
            toolCalls: [{ name: 'slow_deploy', arguments: { target: 'x' } }],
          }
        : { text: 'Deployed.' },
    ),
    tools: [slowDeploy],
    executionMode: 'sequential',
    stopConditions: [{ type: 'max_rounds', rounds: 4 }],
  };
}
