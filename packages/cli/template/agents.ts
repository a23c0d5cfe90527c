/**
 * Your agents, in TypeScript. `npm run dev` runs them on a local Baton (API, worker, Redis) and
 * restarts the worker, only the worker, when you save this file or any file next to it: the
 * next run uses the new code, and runs waiting for a decision carry on.
 *
 * An agent is data: a name, a model and tools. Export it (or an array of them); exports that
 * are not agents are ignored. `counter` needs no API key: its model is a few lines of code.
 * `writer` uses OpenAI: put OPENAI_API_KEY in .env (see .env.example).
 */
import { openai } from '@ai-sdk/openai';
import {
  AiSdkModel,
  defineTool,
  toolResult,
  type AgentDefinition,
  type ModelPort,
  type ModelStreamPart,
} from '@baton/core';
import { z } from 'zod';

/** A tool: edit `execute`, save, and the next run calls the new code. */
const countWords = defineTool({
  name: 'count_words',
  description: 'Counts the words of a text.',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) =>
    toolResult.success({ words: text.split(/\s+/).filter(Boolean).length }),
});

/** A tool a human approves first: the run waits (status "waiting") until someone decides. */
const publish = defineTool({
  name: 'publish',
  description: 'Publishes a text. A human approves first.',
  inputSchema: z.object({ title: z.string().min(1), body: z.string() }),
  approval: { message: 'Publish this?' },
  execute: async ({ title }) => toolResult.success({ published: title }),
});

const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** A scripted model: count_words on your message, then publish (approval), then a summary. */
const scripted: ModelPort = {
  id: 'my-agents:counter',
  async *stream(request): AsyncGenerator<ModelStreamPart> {
    const lastUser = request.messages.findLastIndex((m) => m.role === 'user');
    const user = request.messages[lastUser];
    const results = request.messages
      .slice(lastUser + 1)
      .flatMap((m) => (m.role === 'tool' ? [m] : []));
    if (results.length === 0) {
      const text = user?.role === 'user' && typeof user.content === 'string' ? user.content : '';
      yield {
        type: 'tool-call',
        id: `count-${request.step}`,
        name: 'count_words',
        arguments: { text },
      };
      yield { type: 'finish', usage, finishReason: 'tool-calls' };
      return;
    }
    if (results.length === 1) {
      const body = JSON.stringify(results[0]?.content);
      yield {
        type: 'tool-call',
        id: `publish-${request.step}`,
        name: 'publish',
        arguments: { title: 'word count', body },
      };
      yield { type: 'finish', usage, finishReason: 'tool-calls' };
      return;
    }
    yield {
      type: 'text-delta',
      delta: results.map((r) => `${r.toolName}: ${JSON.stringify(r.content)}`).join('; '),
    };
    yield { type: 'finish', usage, finishReason: 'stop' };
  },
};

export const counter: AgentDefinition = {
  name: 'counter',
  description: 'Counts the words you send and publishes the count after approval (no API key)',
  model: scripted,
  tools: [countWords, publish],
};

export const writer: AgentDefinition = {
  name: 'writer',
  description: 'Writes what you ask, counts its words, publishes it after approval (OpenAI)',
  systemPrompt:
    'Write what the user asks for in a few sentences, count its words, then publish it.',
  // The provider reads OPENAI_API_KEY when it is called: without it only writer's runs fail.
  model: new AiSdkModel(openai.chat('gpt-4o-mini'), { settings: { temperature: 0.7 } }),
  tools: [countWords, publish],
  executionMode: 'sequential',
  stopConditions: [{ type: 'max_rounds', rounds: 6 }],
  modelRetry: { maxAttempts: 3, callTimeoutMs: 60_000 },
};
