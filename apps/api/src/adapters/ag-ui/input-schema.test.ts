import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgUiRunInputSchema } from './input-schema.ts';
import { inputToCommands } from './input.ts';
import { pathsOf, withAt } from '@baton/testing/json-paths';

/** A RunAgentInput with every field AG-UI defines, each message role and each content part. */
const full = {
  threadId: 't1',
  runId: 'r1',
  protocolVersion: '1',
  parentRunId: 'r0',
  state: { a: 1 },
  messages: [
    { id: 'd', role: 'developer', content: 'be brief', name: 'dev', metadata: { k: 1 } },
    { id: 's', role: 'system', content: 'sys' },
    {
      id: 'a',
      role: 'assistant',
      content: 'calling',
      toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    },
    { id: 't', role: 'tool', content: 'out', toolCallId: 'c1', error: 'e' },
    { id: 'act', role: 'activity', activityType: 'plan', content: { step: 1 } },
    { id: 'rs', role: 'reasoning', content: 'thinking' },
    {
      id: 'u',
      role: 'user',
      name: 'me',
      encryptedValue: 'x',
      content: [
        { type: 'text', text: 'hello', id: 'p1' },
        { type: 'image', source: { type: 'url', value: 'https://x/y.png', mimeType: 'image/png' } },
        { type: 'audio', source: { type: 'data', value: 'AAAA', mimeType: 'audio/wav' } },
        { type: 'document', source: { type: 'file', value: 'file-1', provider: 'openai' } },
      ],
    },
  ],
  tools: [{ name: 'f', description: 'does f', parameters: { type: 'object' }, metadata: {} }],
  context: [{ description: 'where', value: 'here' }],
  forwardedProps: { agent: 'ops' },
  resume: [{ interruptId: 'i1', status: 'resolved', payload: { ok: true }, metadata: {} }],
};

/** What Baton asks beyond AG-UI: ids it keys runs and decisions by are not empty. */
const batonOnly = (input: unknown): boolean =>
  JSON.stringify(input).includes('"threadId":""') ||
  JSON.stringify(input).includes('"runId":""') ||
  JSON.stringify(input).includes('"interruptId":""');

const PATHS = pathsOf(full);

describe("the AG-UI input schema is @ag-ui/core's", () => {
  it('both accept the full input', () => {
    expect(RunAgentInputSchema.safeParse(full).success).toBe(true);
    expect(AgUiRunInputSchema.safeParse(full).success).toBe(true);
  });

  it('any field replaced by any value (or removed): refused by one iff refused by the other', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PATHS),
        fc.oneof(
          fc.anything(),
          fc.constant(undefined),
          fc.constantFrom(5, { x: 1 }, [{ type: 'text', text: 5 }], null, '', [], true),
        ),
        (path, value) => {
          const input = withAt(full, path, value);
          const theirs = RunAgentInputSchema.safeParse(input).success;
          const ours = AgUiRunInputSchema.safeParse(input).success;
          if (!theirs) expect(ours, `${path.join('.')} = ${JSON.stringify(value)}`).toBe(false);
          else if (!batonOnly(input))
            expect(ours, `${path.join('.')} = ${JSON.stringify(value)}`).toBe(true);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it.each([5, { x: 1 }, [{ type: 'text', text: 5 }], null, [5], [{ type: 'img' }]])(
    'a user message whose content is %j is refused, naming the field',
    (content) => {
      const input = { threadId: 't', runId: 'r', messages: [{ id: 'u', role: 'user', content }] };
      expect(RunAgentInputSchema.safeParse(input).success).toBe(false);
      const parsed = AgUiRunInputSchema.safeParse(input);
      expect(parsed.success).toBe(false);
      const paths = parsed.error!.issues.map((i) => i.path.join('.'));
      expect(paths.every((p) => p.startsWith('messages.0.content'))).toBe(true);
      expect(parsed.error!.issues.map((i) => i.message).join(' ')).not.toMatch(/^Invalid input$/);
      // The pure mapper says so too (it never reaches "the user message has no content").
      expect(inputToCommands(input, null, { agent: 'x' })).toMatchObject({
        kind: 'error',
        code: 'bad_request',
        message: expect.stringContaining('messages.0.content') as string,
      });
    },
  );
});
