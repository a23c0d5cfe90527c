import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from './clock.ts';
import { executeTool, type ExecuteToolOptions } from './engine/execute-tool.ts';
import { isSleepTicket } from '@baton/protocol';
import { ToolSchemaMissingError } from './errors.ts';
import {
  defineTool,
  describeTool,
  toolInputSchema,
  toolResult,
  type ToolDefinition,
} from './tools.ts';

const schema = {
  type: 'object',
  properties: { city: { type: 'string', minLength: 1 }, days: { type: 'integer', minimum: 1 } },
  required: ['city'],
  additionalProperties: false,
};

const seen: unknown[] = [];
const forecast: ToolDefinition = {
  name: 'forecast',
  description: 'Weather for a city',
  inputJsonSchema: schema,
  execute: async (args) => {
    seen.push(args);
    return toolResult.success('sunny');
  },
};

const clock = new ManualClock(0);
const options: ExecuteToolOptions = {
  identity: { runId: 'r', threadId: 't', turnId: 'turn-0', tenantId: 'x', agent: 'a' },
  state: { run: {}, thread: {} },
  signal: new AbortController().signal,
  now: () => clock.now(),
  sleep: (ms, s) => clock.sleep(ms, s),
};

const call = (args: Record<string, unknown>) =>
  executeTool(
    forecast,
    {
      toolCallId: 'c1',
      toolName: 'forecast',
      arguments: args as never,
      attempt: 0,
      idempotencyKey: 'k',
    },
    options,
  );

describe('a tool that declares a JSON Schema instead of zod', () => {
  it('describes itself to the model with that schema, unchanged', () => {
    expect(describeTool(forecast).inputSchema).toEqual(schema);
  });

  it('runs with arguments the schema accepts', async () => {
    const result = await call({ city: 'Oslo', days: 2 });
    expect(result.result).toEqual({ kind: 'success', output: 'sunny' });
    expect(seen.at(-1)).toEqual({ city: 'Oslo', days: 2 });
  });

  it.each([
    [{}, 'city'],
    [{ city: '' }, 'city'],
    [{ city: 'Oslo', days: 0 }, 'days'],
    [{ city: 'Oslo', extra: true }, ''],
  ])('refuses %j before executing', async (args, path) => {
    const before = seen.length;
    const result = await call(args);
    expect(result.result).toMatchObject({ kind: 'error', code: 'invalid_arguments' });
    expect(result.result.kind === 'error' && result.result.message).toContain(path);
    expect(seen).toHaveLength(before);
  });

  it('prefers a zod schema when both are given (the JSON Schema is only what the model sees)', () => {
    const zodSchema = z.object({ city: z.string() });
    const both: ToolDefinition = { ...forecast, inputSchema: zodSchema };
    expect(toolInputSchema(both)).toBe(zodSchema);
    expect(describeTool(both).inputSchema).toEqual(schema);
  });

  it('a tool with neither schema is a typed error', () => {
    const none: ToolDefinition = { name: 'bare', description: 'no schema' };
    expect(() => toolInputSchema(none)).toThrow(ToolSchemaMissingError);
  });
});

describe('describeTool', () => {
  it("converts a zod schema once per tool: every request shares the tool's descriptor", () => {
    const weather = defineTool({
      name: 'weather',
      description: 'weather for a city',
      inputSchema: z.object({ city: z.string().min(1) }),
      execute: () => Promise.resolve(toolResult.success('sunny')),
    });
    const first = describeTool(weather);
    expect(first.inputSchema).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string', minLength: 1 } },
    });
    expect(describeTool(weather)).toBe(first);
    // Another definition with the same name is another tool: its own schema.
    const other = defineTool({
      name: 'weather',
      description: 'weather for a zip code',
      inputSchema: z.object({ zip: z.string() }),
    });
    expect(describeTool(other).inputSchema).toMatchObject({ properties: { zip: {} } });
  });
});

describe('toolResult.sleep', () => {
  it('writes a reason the release before reads (7c7c246: approval, client_tool, input), marked as a sleep', () => {
    const result = toolResult.sleep(Date.UTC(2030, 0, 1));
    if (result.kind !== 'pending') throw new Error('a sleep suspends');
    expect(['approval', 'client_tool', 'input']).toContain(result.ticket.reason);
    expect(isSleepTicket(result.ticket)).toBe(true);
    expect(isSleepTicket({ reason: 'input' })).toBe(false);
    expect(isSleepTicket({ reason: 'sleep' })).toBe(true);
  });
});
