/**
 * Test helpers for the Redis adapters: real checkpoints built with the core Engine, and
 * representative event bodies (including empty arrays/objects that must round-trip unchanged).
 */
import { randomUUID } from 'node:crypto';
import type { Checkpoint, EventBody, RunEvent, RunIdentity, RunStatus } from '@baton/protocol';
import { Engine } from '@baton/core';
import type { Redis } from 'ioredis';
import type { RedisRunStore } from '@baton/runtime/internal';
import { agentWith, echoTool } from '../../core/src/testing/fixtures.ts';

export interface TestRun {
  readonly checkpoint: Checkpoint;
  readonly events: readonly EventBody[];
}

function testIdentity(overrides: Partial<RunIdentity> = {}): RunIdentity {
  return {
    runId: `run-${randomUUID()}`,
    threadId: 'thread-1',
    turnId: 'turn-1',
    tenantId: 'tenant-a',
    agent: 'test-agent',
    ...overrides,
  };
}

/** A freshly created run (status 'created') and its creation events, as the Engine builds them. */
export function createdRun(identity: Partial<RunIdentity> = {}, now = 1_000): TestRun {
  const id = testIdentity(identity);
  const engine = new Engine(agentWith([], [echoTool()], { name: id.agent }));
  const t = engine.create({ identity: id, input: [{ role: 'user', content: 'hello' }] }, now);
  return { checkpoint: t.checkpoint, events: t.events };
}

/** A plain-data successor checkpoint (what a step would commit). */
export function nextCheckpoint(
  cp: Checkpoint,
  patch: { status?: RunStatus; step?: number; updatedAt?: number } = {},
): Checkpoint {
  return {
    ...cp,
    status: patch.status ?? cp.status,
    step: patch.step ?? cp.step + 1,
    updatedAt: patch.updatedAt ?? cp.updatedAt + 1,
    state: { ...cp.state, run: { ...cp.state.run, step: patch.step ?? cp.step + 1 } },
  };
}

/** Bodies whose JSON has empty arrays and objects in several places. */
export function trickyBodies(step = 0): EventBody[] {
  return [
    { type: 'state.delta', scope: 'run', patches: [] },
    {
      type: 'tool_call.created',
      step,
      toolCallId: 'call-1',
      toolName: 'echo',
      arguments: {},
      index: 0,
    },
    {
      type: 'message.assistant',
      step,
      message: {
        id: 'm-1',
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call-1', name: 'echo', arguments: {} }],
      },
    },
    { type: 'state.conflict', key: 'k', winner: 'a', rejected: [] },
    {
      type: 'state.delta',
      scope: 'thread',
      patches: [{ op: 'set', key: 'x', value: { nested: [], obj: {}, s: 'é"\\/\n' } }],
    },
  ];
}

export function textDelta(step: number, delta: string): EventBody {
  return { type: 'text.delta', step, messageId: `m-${step}`, delta };
}

/** How many appends holderAppend made per run (its appends are one attempt's). */
const holderAppends = new Map<string, number>();

/**
 * Appends deltas the way a worker does: as the run's lease holder (a fixed test token, taken if
 * free) and as one inference attempt, so tests that only need "events outside a commit" read
 * like they used to.
 */
export async function holderAppend(
  store: RedisRunStore,
  redis: Redis,
  runId: string,
  bodies: readonly EventBody[],
): Promise<readonly RunEvent[]> {
  const token = 'test-holder';
  const { lease, cp } = store.keys.run(runId);
  await redis.set(lease, token, 'PX', 60_000);
  // One attempt for the whole test: each append is its next one.
  const index = holderAppends.get(cp) ?? 0;
  holderAppends.set(cp, index + 1);
  return store.appendDeltas(
    runId,
    token,
    { step: 0, nonce: 'test', reset: { type: 'inference.reset', step: 0, messageId: 'm' }, index },
    bodies,
  );
}
