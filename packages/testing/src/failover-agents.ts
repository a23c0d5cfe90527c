/**
 * The agent of the failover test (test/cluster/cluster-failover.test.ts), loaded by a worker
 * process by path like any agents module. `failover`: three inference rounds that stream text
 * slowly, the first two each calling `wait` twice in parallel (BullMQ child jobs of the step), so
 * a run is in flight for seconds and has queue traffic, streamed output and tool jobs when the
 * master under it dies. Each finished execution of `wait` prints a PROBE line, so the test counts
 * executions of every call across the failover.
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  ScriptedModel,
  defineTool,
  toolResult,
  type AgentDefinition,
  type InferenceRequest,
  type ScriptedTurn,
} from '@baton/core';
import { systemClock } from '@baton/runtime';

const ROUNDS = 3;
const DELTAS = 8;
const DELTA_MS = 200;
const TOOL_MS = 500;

const wait = defineTool({
  name: 'wait',
  description: 'waits a moment, then answers',
  inputSchema: z.object({ i: z.number() }),
  execute: async ({ i }, ctx) => {
    await new Promise((r) => setTimeout(r, TOOL_MS));
    process.stdout.write(
      `PROBE ${JSON.stringify({ point: 'tool-executed', runId: ctx.identity.runId, toolCallId: ctx.toolCallId, i })}\n`,
    );
    return toolResult.success({ i });
  },
});

function turn(request: InferenceRequest): ScriptedTurn {
  let text = '';
  for (let d = 0; d < DELTAS; d += 1) text += `s${request.step}w${d} `;
  if (request.step >= ROUNDS) return { text, chunkDelayMs: DELTA_MS };
  return {
    text,
    chunkDelayMs: DELTA_MS,
    toolCalls: [
      { name: 'wait', arguments: { i: 1 } },
      { name: 'wait', arguments: { i: 2 } },
    ],
  };
}

function failoverAgents(): AgentDefinition[] {
  return [
    {
      name: 'failover',
      model: new ScriptedModel(turn, { clock: systemClock }),
      tools: [wait],
      executionMode: 'parallel_streaming',
    },
  ];
}

/** What a worker's BATON_AGENTS names to run these agents. */
export const FAILOVER_AGENTS_MODULE = fileURLToPath(import.meta.url);

/** @public What the worker runs when it loads this module by path (no import names it). */
export default failoverAgents();
