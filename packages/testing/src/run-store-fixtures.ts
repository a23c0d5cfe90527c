/** Runs, checkpoints and event bodies for the RunStore conformance suite. */
import { Engine, ScriptedModel } from '@baton/core';
import type {
  Checkpoint,
  EventBody,
  Message,
  RunEvent,
  RunIdentity,
  RunStatus,
} from '@baton/protocol';

/** The tenant of the runs createdRun makes unless told otherwise. */
export const TENANT = 'tenant-a';
let runCounter = 0;

/** A run as the Engine creates it (status 'created'), with its creation events. */
export function createdRun(
  identity: Partial<RunIdentity> = {},
  now = 1_000,
): { readonly checkpoint: Checkpoint; readonly events: readonly EventBody[] } {
  runCounter += 1;
  const id: RunIdentity = {
    runId: `run-${runCounter}-${globalThis.crypto.randomUUID()}`,
    threadId: 'thread-1',
    turnId: 'turn-1',
    tenantId: TENANT,
    agent: 'conformance-agent',
    ...identity,
  };
  const engine = new Engine({ name: id.agent, model: new ScriptedModel([]), tools: [] });
  const t = engine.create({ identity: id, input: [{ role: 'user', content: 'hello' }] }, now);
  return { checkpoint: t.checkpoint, events: t.events };
}

/** A plain-data successor checkpoint, as a step would commit it. */
export function nextCheckpoint(
  cp: Checkpoint,
  patch: { status?: RunStatus; messages?: readonly Message[] } = {},
): Checkpoint {
  return {
    ...cp,
    status: patch.status ?? cp.status,
    step: cp.step + 1,
    updatedAt: cp.updatedAt + 1,
    messages: patch.messages ? [...patch.messages] : cp.messages,
    state: { ...cp.state, run: { ...cp.state.run, step: cp.step + 1 } },
  };
}

/** Bodies whose JSON holds empty arrays and objects, escapes and non-ASCII text. */
export function trickyBodies(step: number): EventBody[] {
  return [
    { type: 'state.delta', scope: 'run', patches: [] },
    {
      type: 'tool_call.created',
      step,
      toolCallId: `call-${step}`,
      toolName: 'echo',
      arguments: {},
      index: 0,
    },
    {
      type: 'state.delta',
      scope: 'thread',
      patches: [{ op: 'set', key: 'x', value: { nested: [], obj: {}, s: 'é"\\/\n ✓' } }],
    },
  ];
}

export function delta(step: number, text: string): EventBody {
  return { type: 'text.delta', step, messageId: `m-${step}`, delta: text };
}

export function userMessages(from: number, count: number): Message[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `u-${from + i}`,
    role: 'user' as const,
    content: `message ${from + i} ✓ "quoted" \\ {}`,
  }));
}

/** What a stored event says besides its envelope (seq, runId, threadId, turnId, at). */
export function bodyOf(event: RunEvent): Record<string, unknown> {
  const { seq: _s, runId: _r, threadId: _t, turnId: _u, at: _a, ...body } = event;
  return body;
}

export function seqs(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}
