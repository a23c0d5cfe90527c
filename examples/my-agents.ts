/**
 * Agents in your own module, run by the shipped worker without changing Baton:
 *
 *   BATON_AGENTS=./examples/my-agents.ts npm start            # API + a worker with these agents
 *   BATON_AGENTS=./examples/my-agents.ts npm run worker       # a worker alone, every agent here
 *   BATON_AGENTS=./examples/my-agents.ts:haiku npm run worker # one export
 *
 * The path is relative to the working directory. A module exports an AgentDefinition, an array of
 * them, or a default export; the worker imports it with the project's Node 24, which runs
 * TypeScript directly (it strips the types), whatever Node runs npm.
 *
 * `haiku` uses OpenAI through the AI SDK (set OPENAI_API_KEY; a run without it fails with the
 * provider's message). `echo` needs no key: its model is a few lines of code, which is also how
 * to plug in anything that is not an AI SDK provider.
 */
import { openai } from '@ai-sdk/openai';
import {
  AiSdkModel,
  defineTool,
  toolResult,
  type AgentDefinition,
  type ModelPort,
} from '@baton/core';
import { z } from 'zod';

const countWords = defineTool({
  name: 'count_words',
  description: 'Counts the words of a text.',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) =>
    toolResult.success({ words: text.split(/\s+/).filter(Boolean).length }),
});

// A JSON Schema works as well as zod (validated the same way, shown to the model as written).
const publish = {
  name: 'publish',
  description: 'Publishes a poem. A human approves first.',
  inputJsonSchema: {
    type: 'object',
    properties: { title: { type: 'string', minLength: 1 }, body: { type: 'string' } },
    required: ['title', 'body'],
    additionalProperties: false,
  },
  approval: { message: 'Publish this poem?' },
  execute: async (args: unknown) =>
    toolResult.success({ published: (args as { title: string }).title }),
};

export const haiku: AgentDefinition = {
  name: 'haiku',
  description: 'Writes a haiku, counts its words, publishes it after approval',
  systemPrompt: 'Write one haiku about the topic, count its words, then publish it.',
  // The provider reads OPENAI_API_KEY when a call is made, so `echo` alone runs without it.
  model: new AiSdkModel(openai.chat('gpt-4o-mini'), { settings: { temperature: 0.7 } }),
  tools: [countWords, publish],
  executionMode: 'sequential',
  stopConditions: [{ type: 'max_rounds', rounds: 6 }],
  modelRetry: { maxAttempts: 5, callTimeoutMs: 60_000 },
};

const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** Answers by repeating the last user message, once through count_words. */
const echoModel: ModelPort = {
  id: 'example:echo',
  async *stream(request) {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') {
      yield { type: 'text-delta', delta: `Counted: ${JSON.stringify(last.content)}` };
      yield { type: 'finish', usage, finishReason: 'stop' };
      return;
    }
    const text = last?.role === 'user' ? last.content : '';
    yield {
      type: 'tool-call',
      id: `count-${request.step}`,
      name: 'count_words',
      arguments: { text },
    };
    yield { type: 'finish', usage, finishReason: 'tool-calls' };
  },
};

export const echo: AgentDefinition = {
  name: 'echo',
  description: 'Counts the words you send (no API key needed)',
  model: echoModel,
  tools: [countWords],
};
