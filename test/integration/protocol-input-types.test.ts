/**
 * Issue 20 item 8: the protocol routes refuse an input of the wrong shape before anything starts.
 * Every field of a full AG-UI RunAgentInput (and every field Baton reads of an AI SDK chat
 * request) is replaced by values of the wrong type; each request gets a 4xx JSON error naming
 * the field, and no run or thread is created. @ag-ui/core's own schema is the oracle of what is
 * wrong for AG-UI.
 */
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { createDemoAgents } from '@baton/core/testing';
import type { ErrorBody, RunPage } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { pathsOf, withAt, type JsonPath as Path } from '@baton/testing/json-paths';

const WRONG: readonly unknown[] = [
  5,
  { x: 1 },
  [{ type: 'text', text: 5 }],
  null,
  true,
  'text',
  [],
  undefined,
];

/** A path as the API's errors write it: `messages[0].content`. */
const fieldName = (path: Path): string =>
  path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');

let c: ApiCluster;
let api: ApiClient;

beforeAll(async () => {
  c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock));
  api = new ApiClient(c.apis[0]!.url, KEYS.a);
});
afterAll(async () => {
  await c.stop();
});

/** Nothing was created for the thread: no run on it, and no thread. */
async function expectNothingOn(threadId: string): Promise<void> {
  const runs = await api.get<RunPage>(`/v1/runs?thread=${threadId}`);
  expect(runs.status).toBe(200);
  expect(runs.body.runs).toEqual([]);
  expect((await api.get(`/v1/threads/${threadId}`)).status).toBe(404);
}

describe('protocol routes refuse inputs of the wrong type, starting nothing', () => {
  it('AG-UI: every field of RunAgentInput with a wrong type → 400 validation_failed naming it', async () => {
    const threadId = `agui-types-${Date.now().toString(36)}`;
    const full = {
      threadId,
      runId: 'r1',
      protocolVersion: '1',
      parentRunId: 'r0',
      state: {},
      messages: [
        {
          id: 'a',
          role: 'assistant',
          content: 'hi',
          toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { id: 't', role: 'tool', content: 'out', toolCallId: 'c1' },
        { id: 'u', role: 'user', name: 'me', content: [{ type: 'text', text: 'deploy' }] },
      ],
      tools: [{ name: 'f', description: 'does f', parameters: { type: 'object' } }],
      context: [{ description: 'where', value: 'here' }],
      forwardedProps: { agent: 'assistant' },
    };
    expect(RunAgentInputSchema.safeParse(full).success).toBe(true);
    let sent = 0;
    for (const path of pathsOf(full)) {
      const field = path.join('.');
      for (const wrong of WRONG) {
        const input = withAt(full, path, wrong);
        if (RunAgentInputSchema.safeParse(input).success) continue; // not wrong for AG-UI
        sent += 1;
        const reply = await api.post<ErrorBody>('/v1/ag-ui', input);
        const what = `${field} = ${JSON.stringify(wrong)}: ${reply.status} ${JSON.stringify(reply.body)}`;
        expect(reply.status, what).toBe(400);
        expect(reply.body.error.code, what).toBe('validation_failed');
        // The message names the field (or its message/part, for a discriminator).
        const named = fieldName(path.slice(0, 3));
        expect(reply.body.error.message, what).toContain(named);
        expect(reply.headers.get('content-type'), what).toMatch(/application\/json/);
      }
    }
    expect(sent).toBeGreaterThan(60);
    // The same input with a right content is accepted: the refusals were about the types.
    const content = [5, { x: 1 }, [{ type: 'text', text: 5 }]];
    for (const wrong of content) {
      const reply = await api.post<ErrorBody>(
        '/v1/ag-ui',
        withAt(full, ['messages', 2, 'content'], wrong),
      );
      expect(reply.status).toBe(400);
      expect(reply.body.error.message).toContain('messages[2].content');
    }
    await expectNothingOn(threadId);
  });

  it('AI SDK: every field Baton reads with a wrong type → 400 naming it', async () => {
    const id = `aisdk-types-${Date.now().toString(36)}`;
    const full = {
      id,
      trigger: 'submit-message',
      agent: 'assistant',
      messageId: 'm1',
      messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'deploy' }] }],
    };
    const cases: [Path, unknown][] = [];
    for (const path of pathsOf(full))
      for (const wrong of WRONG) {
        const current = path.reduce<unknown>(
          (node, key) => (node as Record<string | number, unknown>)[key],
          full,
        );
        // Same type as the valid value: not a wrong type.
        if (typeof wrong === typeof current && Array.isArray(wrong) === Array.isArray(current))
          continue;
        if (path.join('.') === 'messageId' && wrong === undefined) continue; // optional
        if (path.join('.') === 'agent' && wrong === undefined) continue; // optional
        cases.push([path, wrong]);
      }
    cases.push([['messages', 0, 'parts'], [{ type: 'text', text: 5 }]]);
    cases.push([['messages', 0, 'parts', 1], { type: 'text', text: { x: 1 } }]);
    for (const [path, wrong] of cases) {
      const reply = await api.post<ErrorBody>('/v1/ai-sdk/chat', withAt(full, path, wrong));
      const what = `${path.join('.')} = ${JSON.stringify(wrong)}: ${reply.status} ${JSON.stringify(reply.body)}`;
      expect(reply.status, what).toBeGreaterThanOrEqual(400);
      expect(reply.status, what).toBeLessThan(500);
      expect(reply.body.error.message, what).toMatch(/\w/);
    }
    // A wrong-typed text part next to a good one is refused, not skipped.
    const mixed = await api.post<ErrorBody>('/v1/ai-sdk/chat', {
      ...full,
      messages: [
        {
          id: 'u1',
          role: 'user',
          parts: [
            { type: 'text', text: 5 },
            { type: 'text', text: 'deploy' },
          ],
        },
      ],
    });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.message).toContain('messages.0.parts.0.text');
    await expectNothingOn(id);
  });
});
