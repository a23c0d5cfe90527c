import { canonicalJson, type JsonValue, type StopCondition } from '@baton/protocol';
import {
  MAX_CONTENT_MATCH_TEXT,
  MAX_CONTENT_PATTERN_LENGTH,
  StopConditionSchema,
  StopConditionsSchema,
} from '@baton/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ManualClock } from './clock.ts';
import {
  evaluateStopConditions,
  loopHistoryLimit,
  toolCallSignature,
  type StopEvaluationInput,
} from './stop-conditions.ts';
import { agentWith, echoTool, runnerFor } from './testing/fixtures.ts';
import { defineTool, toolResult } from './tools.ts';

interface Overrides {
  step?: number;
  totalTokens?: number;
  consecutiveErrors?: number;
  recentToolCalls?: string[];
  lastStepTools?: string[];
  startedAt?: number | null;
  now?: number;
  text?: string;
}

function input(o: Overrides = {}): StopEvaluationInput {
  return {
    checkpoint: {
      step: o.step ?? 1,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: o.totalTokens ?? 0 },
      counters: {
        consecutiveErrors: o.consecutiveErrors ?? 0,
        recentToolCalls: o.recentToolCalls ?? [],
        lastStepTools: o.lastStepTools ?? [],
      },
      startedAt: o.startedAt === undefined ? 0 : o.startedAt,
      messages: [],
    },
    now: o.now ?? 0,
    lastAssistantText: o.text ?? '',
  };
}

function fires(condition: StopCondition, o: Overrides): string | null {
  const result = evaluateStopConditions([condition], input(o));
  if (result === null) return null;
  expect(result.kind).toBe('stopped');
  expect(result.code).toBe(condition.type);
  return result.detail ?? '';
}

describe('evaluateStopConditions: boundaries', () => {
  it('max_rounds fires when step >= rounds', () => {
    const c: StopCondition = { type: 'max_rounds', rounds: 3 };
    expect(fires(c, { step: 2 })).toBeNull();
    expect(fires(c, { step: 3 })).toBe('reached 3 of 3 rounds');
    expect(fires(c, { step: 4 })).toBe('reached 4 of 3 rounds');
  });

  it('timeout fires when elapsed >= seconds*1000 from startedAt', () => {
    const c: StopCondition = { type: 'timeout', seconds: 2 };
    expect(fires(c, { startedAt: 1_000, now: 2_999 })).toBeNull();
    expect(fires(c, { startedAt: 1_000, now: 3_000 })).toBe('ran 2000 ms, limit 2000 ms');
    expect(fires({ type: 'timeout', seconds: 0.5 }, { startedAt: 0, now: 499 })).toBeNull();
    expect(fires({ type: 'timeout', seconds: 0.5 }, { startedAt: 0, now: 500 })).not.toBeNull();
  });

  it('timeout never fires for a run that has not started', () => {
    const c: StopCondition = { type: 'timeout', seconds: 1 };
    expect(fires(c, { startedAt: null, now: Number.MAX_SAFE_INTEGER })).toBeNull();
  });

  it('token_budget fires only when the total exceeds the budget', () => {
    const c: StopCondition = { type: 'token_budget', maxTotal: 100 };
    expect(fires(c, { totalTokens: 99 })).toBeNull();
    expect(fires(c, { totalTokens: 100 })).toBeNull();
    expect(fires(c, { totalTokens: 101 })).toBe('used 101 tokens, budget 100');
  });

  it('consecutive_errors fires when the count reaches max', () => {
    const c: StopCondition = { type: 'consecutive_errors', max: 3 };
    expect(fires(c, { consecutiveErrors: 0 })).toBeNull();
    expect(fires(c, { consecutiveErrors: 2 })).toBeNull();
    expect(fires(c, { consecutiveErrors: 3 })).toBe('3 consecutive tool errors, limit 3');
  });

  it('stop_on_tool matches the exact tool name among the last step tools', () => {
    const c: StopCondition = { type: 'stop_on_tool', toolName: 'finish' };
    expect(fires(c, { lastStepTools: [] })).toBeNull();
    expect(fires(c, { lastStepTools: ['echo', 'finisher', 'Finish'] })).toBeNull();
    expect(fires(c, { lastStepTools: ['echo', 'finish'] })).toBe('tool finish was called');
  });

  it('content_match applies the pattern with its flags to the last assistant text', () => {
    expect(fires({ type: 'content_match', pattern: 'done' }, { text: 'All DONE.' })).toBeNull();
    expect(
      fires({ type: 'content_match', pattern: 'done', flags: 'i' }, { text: 'All DONE.' }),
    ).toBe('assistant output matched /done/');
    expect(fires({ type: 'content_match', pattern: '^ok$' }, { text: 'line\nok' })).toBeNull();
    expect(
      fires({ type: 'content_match', pattern: '^ok$', flags: 'm' }, { text: 'line\nok' }),
    ).not.toBeNull();
    expect(fires({ type: 'content_match', pattern: 'a.b' }, { text: 'a\nb' })).toBeNull();
    expect(
      fires({ type: 'content_match', pattern: 'a.b', flags: 's' }, { text: 'a\nb' }),
    ).not.toBeNull();
    expect(fires({ type: 'content_match', pattern: 'x' }, { text: '' })).toBeNull();
  });

  it('content_match runs in linear time: a pattern that backtracks exponentially in JS returns at once', () => {
    const c: StopCondition = { type: 'content_match', pattern: '^(?:.|.){40}Q' };
    expect(fires(c, { text: 'a'.repeat(60) })).toBeNull();
    expect(
      fires({ type: 'content_match', pattern: '(a|aa)+$b' }, { text: 'a'.repeat(5_000) }),
    ).toBeNull();
  });

  it('content_match sees only the last MAX_CONTENT_MATCH_TEXT characters of the text', () => {
    const c: StopCondition = { type: 'content_match', pattern: 'Q' };
    const filler = 'a'.repeat(MAX_CONTENT_MATCH_TEXT);
    expect(fires(c, { text: `Q${filler}` })).toBeNull();
    expect(fires(c, { text: `${filler}Q` })).not.toBeNull();
  });

  it('loop_detection counts identical signatures inside the window (threshold defaults to 2)', () => {
    const c: StopCondition = { type: 'loop_detection', window: 3 };
    expect(fires(c, { recentToolCalls: [] })).toBeNull();
    expect(fires(c, { recentToolCalls: ['a', 'b', 'c'] })).toBeNull();
    expect(fires(c, { recentToolCalls: ['a', 'b', 'a'] })).toBe(
      'identical call repeated 2 times within 3: a',
    );
    // The first 'a' slid out of the window of 3.
    expect(fires(c, { recentToolCalls: ['a', 'b', 'c', 'a'] })).toBeNull();
  });

  it('loop_detection honors an explicit threshold', () => {
    const c: StopCondition = { type: 'loop_detection', window: 4, threshold: 3 };
    expect(fires(c, { recentToolCalls: ['a', 'a', 'b', 'b'] })).toBeNull();
    expect(fires(c, { recentToolCalls: ['a', 'b', 'a', 'a'] })).toBe(
      'identical call repeated 3 times within 4: a',
    );
    expect(fires(c, { recentToolCalls: ['a', 'a', 'b', 'c', 'a'] })).toBeNull();
  });

  it('loop_detection truncates long signatures in the detail', () => {
    const sig = 'x'.repeat(300);
    const detail = fires({ type: 'loop_detection', window: 2 }, { recentToolCalls: [sig, sig] });
    expect(detail).toBe(`identical call repeated 2 times within 2: ${'x'.repeat(120)}`);
  });

  it('no conditions never stop', () => {
    expect(evaluateStopConditions([], input({ step: 1_000, totalTokens: 1e9 }))).toBeNull();
  });
});

describe('evaluateStopConditions: order', () => {
  it('the first firing condition in declaration order wins', () => {
    const o: Overrides = { step: 5, totalTokens: 500, consecutiveErrors: 9 };
    const a: StopCondition = { type: 'token_budget', maxTotal: 10 };
    const b: StopCondition = { type: 'max_rounds', rounds: 1 };
    const c: StopCondition = { type: 'consecutive_errors', max: 1 };
    expect(evaluateStopConditions([a, b, c], input(o))?.code).toBe('token_budget');
    expect(evaluateStopConditions([b, a, c], input(o))?.code).toBe('max_rounds');
    expect(evaluateStopConditions([c, b, a], input(o))?.code).toBe('consecutive_errors');
  });

  it('a condition that does not fire is skipped in favor of a later one', () => {
    const result = evaluateStopConditions(
      [
        { type: 'max_rounds', rounds: 10 },
        { type: 'stop_on_tool', toolName: 'x' },
      ],
      input({ step: 2, lastStepTools: ['x'] }),
    );
    expect(result).toEqual({ kind: 'stopped', code: 'stop_on_tool', detail: 'tool x was called' });
  });
});

describe('loopHistoryLimit', () => {
  it('is the largest loop_detection window, 0 without one', () => {
    expect(loopHistoryLimit([])).toBe(0);
    expect(loopHistoryLimit([{ type: 'max_rounds', rounds: 3 }])).toBe(0);
    expect(
      loopHistoryLimit([
        { type: 'loop_detection', window: 3 },
        { type: 'max_rounds', rounds: 3 },
        { type: 'loop_detection', window: 7 },
        { type: 'loop_detection', window: 2 },
      ]),
    ).toBe(7);
  });
});

/** Rebuilds every object of a JSON value with its keys in reverse order. */
function reverseKeys(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(reverseKeys);
  return Object.fromEntries(
    Object.keys(value)
      .reverse()
      .map((k) => [k, reverseKeys(value[k] as JsonValue)]),
  );
}

describe('canonicalJson / toolCallSignature', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 0 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"y":0,"z":1}]},"b":1}',
    );
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson('s')).toBe('"s"');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson(true)).toBe('true');
  });

  it('signature is name plus canonical arguments', () => {
    expect(toolCallSignature('search', { q: 'x', limit: 5 })).toBe('search:{"limit":5,"q":"x"}');
    expect(toolCallSignature('search', { limit: 5, q: 'x' })).toBe(
      toolCallSignature('search', { q: 'x', limit: 5 }),
    );
    expect(toolCallSignature('search', { q: 'x' })).not.toBe(
      toolCallSignature('lookup', { q: 'x' }),
    );
    expect(toolCallSignature('a', [1, 2])).not.toBe(toolCallSignature('a', [2, 1]));
  });

  it('is independent of key order and parses back to the same value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (raw) => {
        const value = raw as JsonValue;
        const canonical = canonicalJson(value);
        expect(canonicalJson(reverseKeys(value))).toBe(canonical);
        expect(JSON.parse(canonical)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(toolCallSignature('t', reverseKeys(value))).toBe(`t:${canonical}`);
      }),
      { numRuns: 300 },
    );
  });
});

describe('StopConditionSchema', () => {
  it.each<unknown>([
    { type: 'max_rounds', rounds: 1 },
    { type: 'timeout', seconds: 0.5 },
    { type: 'token_budget', maxTotal: 1000 },
    { type: 'consecutive_errors', max: 2 },
    { type: 'stop_on_tool', toolName: 'finish' },
    { type: 'content_match', pattern: '^done$', flags: 'im' },
    { type: 'content_match', pattern: 'x' },
    { type: 'loop_detection', window: 2 },
    { type: 'loop_detection', window: 5, threshold: 3 },
  ])('accepts %o', (spec) => {
    expect(StopConditionSchema.safeParse(spec).success).toBe(true);
  });

  it.each<[string, unknown]>([
    ['unknown type', { type: 'max_tokens', rounds: 1 }],
    ['rounds 0', { type: 'max_rounds', rounds: 0 }],
    ['fractional rounds', { type: 'max_rounds', rounds: 1.5 }],
    ['negative timeout', { type: 'timeout', seconds: -1 }],
    ['invalid regex', { type: 'content_match', pattern: '(unclosed' }],
    ['empty pattern', { type: 'content_match', pattern: '' }],
    ['bad flag', { type: 'content_match', pattern: 'x', flags: 'g' }],
    ['unknown extra field', { type: 'max_rounds', rounds: 3, extra: true }],
    ['window below 2', { type: 'loop_detection', window: 1 }],
    ['window above 1000 (memory and CPU per step)', { type: 'loop_detection', window: 1_000_001 }],
    ['threshold below 2', { type: 'loop_detection', window: 3, threshold: 1 }],
    ['empty tool name', { type: 'stop_on_tool', toolName: '' }],
    ['missing field', { type: 'token_budget' }],
  ])('rejects %s', (_label, spec) => {
    expect(StopConditionSchema.safeParse(spec).success).toBe(false);
  });

  it('names the regex problem', () => {
    const parsed = StopConditionSchema.safeParse({ type: 'content_match', pattern: '[' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(/not a valid RE2 regular expression/);
    expect(parsed.error?.issues[0]?.path).toEqual(['pattern']);
  });

  it.each<[string, string, RegExp]>([
    ['lookahead', '(?=a)b', /lookaround are not supported/],
    ['backreference', '(a)\\1', /not a valid RE2/],
    ['too long', 'a'.repeat(MAX_CONTENT_PATTERN_LENGTH + 1), /the limit is 512/],
    ['too large a program', '(?:a?){900}a{900}', /instructions \(limit 2000\)/],
  ])('refuses a %s pattern with a message that says why', (_label, pattern, message) => {
    const parsed = StopConditionSchema.safeParse({ type: 'content_match', pattern });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(message);
  });

  it('caps the list at 20 conditions', () => {
    const one = { type: 'max_rounds', rounds: 1 };
    expect(StopConditionsSchema.safeParse(Array.from({ length: 20 }, () => one)).success).toBe(
      true,
    );
    expect(StopConditionsSchema.safeParse(Array.from({ length: 21 }, () => one)).success).toBe(
      false,
    );
  });
});

describe('stop conditions end to end (InProcessRunner)', () => {
  const user = [{ role: 'user' as const, content: 'go' }];

  it('max_rounds stops after the configured number of tool rounds', async () => {
    const agent = agentWith(
      [{ text: 'again', toolCalls: [{ name: 'echo', arguments: { value: 'x' } }] }],
      [echoTool()],
    );
    const { runner } = runnerFor(agent);
    const { finished } = await runner.start({
      agent: 'test-agent',
      input: user,
      options: { stopConditions: [{ type: 'max_rounds', rounds: 2 }] },
    });
    const cp = await finished;
    expect(cp.status).toBe('done');
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'max_rounds',
      detail: 'reached 2 of 2 rounds',
    });
    expect(cp.step).toBe(2);
    expect(cp.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
  });

  it('stop_on_tool stops after the step that called the tool', async () => {
    const agent = agentWith(
      [
        { toolCalls: [{ name: 'echo', arguments: { value: '1' } }] },
        { toolCalls: [{ name: 'echo' }, { name: 'finish' }] },
        { text: 'never reached' },
      ],
      [echoTool(), echoTool('finish')],
      { stopConditions: [{ type: 'stop_on_tool', toolName: 'finish' }] },
    );
    const { runner } = runnerFor(agent);
    const cp = await (await runner.start({ agent: 'test-agent', input: user })).finished;
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'stop_on_tool',
      detail: 'tool finish was called',
    });
    expect(cp.step).toBe(2);
    expect(cp.counters.lastStepTools).toEqual(['echo', 'finish']);
  });

  it('consecutive_errors stops when tools keep failing', async () => {
    const flaky = defineTool({
      name: 'flaky',
      description: 'always fails',
      inputSchema: z.object({}),
      execute: () => Promise.resolve(toolResult.error('nope')),
    });
    const agent = agentWith([{ toolCalls: [{ name: 'flaky' }] }], [flaky]);
    const { runner } = runnerFor(agent);
    const cp = await (
      await runner.start({
        agent: 'test-agent',
        input: user,
        options: { stopConditions: [{ type: 'consecutive_errors', max: 3 }] },
      })
    ).finished;
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'consecutive_errors',
      detail: '3 consecutive tool errors, limit 3',
    });
    expect(cp.step).toBe(3);
    expect(cp.counters.consecutiveErrors).toBe(3);
    const toolMessages = cp.messages.filter((m) => m.role === 'tool');
    expect(toolMessages).toHaveLength(3);
    expect(toolMessages.every((m) => m.role === 'tool' && m.isError)).toBe(true);
  });

  it('a success resets the consecutive error count', async () => {
    const flaky = defineTool({
      name: 'flaky',
      description: 'fails',
      inputSchema: z.object({}),
      execute: () => Promise.resolve(toolResult.error('nope')),
    });
    // error, success, error, error: never 3 in a row, so the model's final text ends the run.
    const agent = agentWith(
      [
        { toolCalls: [{ name: 'flaky' }] },
        { toolCalls: [{ name: 'echo' }] },
        { toolCalls: [{ name: 'flaky' }] },
        { toolCalls: [{ name: 'flaky' }] },
        { text: 'bye' },
      ],
      [flaky, echoTool()],
      { stopConditions: [{ type: 'consecutive_errors', max: 3 }] },
    );
    const { runner } = runnerFor(agent);
    const cp = await (await runner.start({ agent: 'test-agent', input: user })).finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(cp.step).toBe(5);
  });

  it('loop_detection stops a model that repeats the same call', async () => {
    const agent = agentWith(
      // Argument key order differs between steps: signatures are canonical.
      (request) => ({
        toolCalls: [
          {
            name: 'echo',
            arguments: request.step % 2 ? { value: 'v', extra: 1 } : { extra: 1, value: 'v' },
          },
        ],
      }),
      [echoTool()],
    );
    const { runner } = runnerFor(agent);
    const cp = await (
      await runner.start({
        agent: 'test-agent',
        input: user,
        options: { stopConditions: [{ type: 'loop_detection', window: 4, threshold: 3 }] },
      })
    ).finished;
    expect(cp.termination).toMatchObject({ kind: 'stopped', code: 'loop_detection' });
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'loop_detection',
      detail: 'identical call repeated 3 times within 4: echo:{"extra":1,"value":"v"}',
    });
    expect(cp.step).toBe(3);
    expect(cp.counters.recentToolCalls).toHaveLength(3);
  });

  it('loop_detection keeps only the window of signatures', async () => {
    const agent = agentWith(
      (request) =>
        request.step <= 5
          ? { toolCalls: [{ name: 'echo', arguments: { value: String(request.step) } }] }
          : { text: 'end' },
      [echoTool()],
    );
    const { runner } = runnerFor(agent);
    const cp = await (
      await runner.start({
        agent: 'test-agent',
        input: user,
        options: { stopConditions: [{ type: 'loop_detection', window: 2 }] },
      })
    ).finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
    expect(cp.counters.recentToolCalls).toEqual(['echo:{"value":"4"}', 'echo:{"value":"5"}']);
  });

  it('content_match stops when the assistant text matches', async () => {
    const agent = agentWith(
      [
        { text: 'working on it', toolCalls: [{ name: 'echo' }] },
        { text: 'All DONE here', toolCalls: [{ name: 'echo' }] },
        { text: 'never' },
      ],
      [echoTool()],
    );
    const { runner } = runnerFor(agent);
    const cp = await (
      await runner.start({
        agent: 'test-agent',
        input: user,
        options: { stopConditions: [{ type: 'content_match', pattern: '\\bdone\\b', flags: 'i' }] },
      })
    ).finished;
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'content_match',
      detail: 'assistant output matched /\\bdone\\b/',
    });
    expect(cp.step).toBe(2);
  });

  it('token_budget stops once usage exceeds the budget', async () => {
    const agent = agentWith(
      [
        {
          toolCalls: [{ name: 'echo' }],
          usage: { inputTokens: 30, outputTokens: 10, totalTokens: 40 },
        },
      ],
      [echoTool()],
    );
    const { runner } = runnerFor(agent);
    const cp = await (
      await runner.start({
        agent: 'test-agent',
        input: user,
        options: { stopConditions: [{ type: 'token_budget', maxTotal: 80 }] },
      })
    ).finished;
    // 40, 80 (not above), 120 (above).
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'token_budget',
      detail: 'used 120 tokens, budget 80',
    });
    expect(cp.step).toBe(3);
    expect(cp.usage.totalTokens).toBe(120);
  });

  it('timeout stops once the clock passed the limit', async () => {
    const holder: { clock?: ManualClock } = {};
    const slow = defineTool({
      name: 'slow',
      description: 'takes 4 seconds of manual time',
      inputSchema: z.object({}),
      execute: async () => {
        await holder.clock!.advance(4_000);
        return toolResult.success('ok');
      },
    });
    const agent = agentWith([{ toolCalls: [{ name: 'slow' }] }], [slow]);
    const made = runnerFor(agent);
    holder.clock = made.clock;
    const cp = await (
      await made.runner.start({
        agent: 'test-agent',
        input: user,
        options: { stopConditions: [{ type: 'timeout', seconds: 10 }] },
      })
    ).finished;
    expect(cp.termination).toEqual({
      kind: 'stopped',
      code: 'timeout',
      detail: 'ran 12000 ms, limit 10000 ms',
    });
    expect(cp.step).toBe(3);
  });

  it('a model that ends naturally is not cut by a condition that would fire', async () => {
    const agent = agentWith([{ text: 'done' }], [echoTool()]);
    const { runner } = runnerFor(agent);
    const cp = await (
      await runner.start({
        agent: 'test-agent',
        input: user,
        options: {
          stopConditions: [
            { type: 'max_rounds', rounds: 1 },
            { type: 'content_match', pattern: 'done' },
          ],
        },
      })
    ).finished;
    expect(cp.termination).toEqual({ kind: 'natural_end' });
  });
});
