import { z } from 'zod';
import type { AgentDefinition } from '../agent.ts';
import type { ModelPort } from '../model.ts';
import { ScriptedModel, type ScriptedTurn } from '../model/scripted-model.ts';
import type { Clock } from '../ports.ts';
import { defineTool, sleepTool, toolResult, type ToolDefinition } from '../tools.ts';

/**
 * The demo tool set: a normal tool, an approval-gated tool, a client-side tool, a slow tool and
 * a durable sleep.
 */
export function demoTools(clock: Clock): ToolDefinition[] {
  const getWeather = defineTool({
    name: 'get_weather',
    description: 'Current weather for a city',
    inputSchema: z.object({ city: z.string().min(1) }),
    execute: async ({ city }) =>
      toolResult.success({
        city,
        forecast: city.length % 2 === 0 ? 'sunny' : 'cloudy',
        celsius: 10 + (city.length % 15),
      }),
  });
  const deploy = defineTool({
    name: 'deploy_service',
    description: 'Deploys a service to an environment (needs a human approval)',
    inputSchema: z.object({ service: z.string(), environment: z.enum(['staging', 'production']) }),
    approval: {
      message: (args) =>
        `Deploy ${JSON.stringify(args['service'])} to ${JSON.stringify(args['environment'])}?`,
      responseSchema: z.object({ comment: z.string().optional() }),
    },
    execute: async ({ service, environment }, ctx) =>
      toolResult.success({ service, environment, deploymentId: `dep-${ctx.idempotencyKey}` }),
  });
  const confirmInBrowser = defineTool({
    name: 'confirm_in_browser',
    description: 'Asks the user a yes/no question in their browser (client-side tool)',
    inputSchema: z.object({ question: z.string() }),
    clientSide: {
      message: 'Answer in the browser',
      outputSchema: z.object({ answer: z.enum(['yes', 'no']) }),
    },
  });
  const slowReport = defineTool({
    name: 'slow_report',
    description: 'Builds a report slowly; honors cancellation',
    inputSchema: z.object({
      topic: z.string(),
      ms: z.number().int().min(0).max(60_000).default(1_500),
    }),
    execute: async ({ topic, ms }, ctx) => {
      await clock.sleep(ms, ctx.signal);
      return toolResult.success({ topic, pages: 3 });
    },
  });
  return [getWeather, deploy, confirmInBrowser, slowReport, sleepTool(clock)];
}

function assistantScript(): ModelPort {
  // A deterministic stand-in for a real model: it reacts to what the conversation contains.
  return new ScriptedModel((request): ScriptedTurn => {
    const last = request.messages.at(-1);
    const userText = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    if (last?.role === 'user') {
      if (/deploy/i.test(userText))
        return {
          text: 'Checking the weather first, then deploying.',
          toolCalls: [
            { name: 'get_weather', arguments: { city: 'Berlin' } },
            {
              name: 'deploy_service',
              arguments: { service: 'checkout', environment: 'production' },
            },
          ],
        };
      const sleep = /\bsleep (\d+(?:\.\d+)?)\s*s\b/i.exec(userText);
      if (sleep)
        return {
          text: 'Waiting.',
          toolCalls: [{ name: 'baton_sleep', arguments: { seconds: Number(sleep[1]) } }],
        };
      if (/report/i.test(userText))
        return {
          text: 'Building the report.',
          toolCalls: [{ name: 'slow_report', arguments: { topic: userText.slice(0, 40) } }],
        };
      if (/confirm|ask/i.test(userText))
        return {
          text: 'Let me ask you.',
          toolCalls: [{ name: 'confirm_in_browser', arguments: { question: 'Proceed?' } }],
        };
      return {
        text: 'Looking it up.',
        toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
      };
    }
    const results = request.messages.filter((m) => m.role === 'tool').slice(-4);
    const summary = results
      .map((m) => (m.role === 'tool' ? `${m.toolName}: ${JSON.stringify(m.content)}` : ''))
      .join('; ');
    return { text: `All done. ${summary}` };
  });
}

export function createDemoAgents(clock: Clock): AgentDefinition[] {
  const tools = demoTools(clock);
  return [
    {
      name: 'assistant',
      description:
        'Demo assistant: weather lookups, approval-gated deploys, client confirmations, slow reports',
      systemPrompt: 'You are a helpful operations assistant.',
      model: assistantScript(),
      tools,
      executionMode: 'sequential',
      stopConditions: [{ type: 'max_rounds', rounds: 8 }],
    },
    {
      name: 'parallel-assistant',
      description: 'Same tools, every tool call of a round runs at once (ParallelStreaming)',
      model: assistantScript(),
      tools,
      executionMode: 'parallel_streaming',
      stopConditions: [{ type: 'max_rounds', rounds: 8 }],
    },
  ];
}
