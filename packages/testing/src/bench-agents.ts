import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  ScriptedModel,
  defineTool,
  sleepTool,
  toolResult,
  type AgentDefinition,
  type Clock,
  type InferenceRequest,
  type ScriptedTurn,
} from '@baton/core';
import { systemClock } from '@baton/runtime';

const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  inputSchema: z.object({ i: z.number().optional() }),
  execute: async () => toolResult.success(null),
});

const approve = defineTool({
  name: 'approve',
  description: 'waits for a human approval, then does nothing',
  inputSchema: z.object({}),
  approval: {},
  execute: async () => toolResult.success(null),
});

/**
 * What a bench run asks the scripted models of `bench-streaming` and `bench-approval` for: JSON
 * in the run's last user message, e.g. `{"deltas":500,"deltaMs":3,"steps":2}`. Carried by the
 * run itself so that one worker serves every shape a scenario needs, without worker env knobs.
 */
export interface BenchDirective {
  /** Text deltas streamed per inference round (words of ~5 characters). */
  readonly deltas?: number;
  /** Pause before each delta, through the worker's clock. */
  readonly deltaMs?: number;
  /** Inference rounds (`bench-streaming`: every round but the last also calls `noop`). */
  readonly steps?: number;
}

const MAX_DELTAS = 100_000;

export function benchDirective(request: InferenceRequest): Required<BenchDirective> {
  const last = [...request.messages].reverse().find((m) => m.role === 'user');
  let parsed: BenchDirective = {};
  try {
    const value: unknown = JSON.parse(typeof last?.content === 'string' ? last.content : '');
    if (value !== null && typeof value === 'object') parsed = value;
  } catch {
    // Not a directive: the defaults below.
  }
  const int = (v: unknown, fallback: number, max: number): number =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 ? Math.min(v, max) : fallback;
  return {
    deltas: int(parsed.deltas, 1, MAX_DELTAS),
    deltaMs: int(parsed.deltaMs, 0, 10_000),
    steps: int(parsed.steps, 1, 100) || 1,
  };
}

/** `deltas` words, streamed one per delta (ScriptedModel chunks text by whole words). */
function words(deltas: number): string {
  let text = '';
  for (let i = 0; i < deltas; i += 1) text += `w${i % 1000} `;
  return text === '' ? 'done' : text;
}

function streamingTurn(request: InferenceRequest): ScriptedTurn {
  const d = benchDirective(request);
  const last = request.step >= d.steps;
  return {
    text: words(d.deltas),
    chunkDelayMs: d.deltaMs,
    ...(last ? {} : { toolCalls: [{ name: 'noop', arguments: { i: request.step } }] }),
  };
}

function approvalTurn(request: InferenceRequest): ScriptedTurn {
  if (request.step === 1) return { toolCalls: [{ name: 'approve', arguments: {} }] };
  const d = benchDirective(request);
  return { text: words(d.deltas), chunkDelayMs: d.deltaMs };
}

/**
 * Round 1 sleeps what the user message names: `sleep <seconds>`, or `sleep until <epoch ms>`;
 * round 2 ends the run.
 */
function sleepTurn(request: InferenceRequest): ScriptedTurn {
  if (request.step !== 1) return { text: 'done' };
  const user = request.messages.find((m) => m.role === 'user');
  const text = typeof user?.content === 'string' ? user.content : '';
  const until = /sleep until (\d+)/.exec(text)?.[1];
  if (until !== undefined)
    return {
      toolCalls: [
        { name: 'baton_sleep', arguments: { until: new Date(Number(until)).toISOString() } },
      ],
    };
  const seconds = Number(/sleep (\d+(?:\.\d+)?)/.exec(text)?.[1] ?? 1);
  return { toolCalls: [{ name: 'baton_sleep', arguments: { seconds } }] };
}

/**
 * Benchmark agents. `bench` / `bench-sequential`: 3 steps, 2 parallel no-op tools in each of the
 * first two, instant model. `bench-streaming`: streams `deltas` text deltas per round, `deltaMs`
 * apart (see BenchDirective). `bench-approval`: round 1 calls an approval-gated tool, so the run
 * parks until a decision; round 2 streams like `bench-streaming`'s last round. `bench-sleep`:
 * round 1 sleeps durably (`sleep <seconds>` or `sleep until <epoch ms>` in the user message),
 * round 2 ends.
 */
export function benchAgents(clock?: Clock): AgentDefinition[] {
  const round = {
    toolCalls: [
      { name: 'noop', arguments: { i: 1 } },
      { name: 'noop', arguments: { i: 2 } },
    ],
  };
  const opts = clock ? { clock } : {};
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
    {
      name: 'bench-streaming',
      model: new ScriptedModel(streamingTurn, opts),
      tools: [noop],
      executionMode: 'sequential',
    },
    {
      name: 'bench-approval',
      model: new ScriptedModel(approvalTurn, opts),
      tools: [approve],
      executionMode: 'sequential',
    },
    {
      name: 'bench-sleep',
      model: new ScriptedModel(sleepTurn, opts),
      tools: [sleepTool(clock ?? systemClock)],
      executionMode: 'sequential',
    },
  ];
}

/**
 * The shipped worker has no bench set: it loads this file by path like any agents module,
 * `BATON_AGENTS=<BENCH_AGENTS_MODULE>`, and runs the default export (paced by the system clock,
 * as the worker's own clock is).
 */
export const BENCH_AGENTS_MODULE = fileURLToPath(import.meta.url);

/** @public What the worker runs when it loads this module by path (no import names it). */
export default benchAgents(systemClock);
