import { InProcessRunner, type InferenceRequest } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { systemClock } from '@baton/runtime';
import { benchAgents, benchDirective } from './bench-agents.ts';

function request(content: string): InferenceRequest {
  return {
    runId: 'r',
    step: 1,
    messageId: 'm',
    messages: [
      { id: 'u1', role: 'user', content: '{"deltas":7}' },
      { id: 'u2', role: 'user', content },
    ],
    tools: [],
    params: {},
  };
}

describe('bench agents', () => {
  it('read their shape from the last user message, with defaults and bounds', () => {
    expect(benchDirective(request('{"deltas":500,"deltaMs":3,"steps":2}'))).toEqual({
      deltas: 500,
      deltaMs: 3,
      steps: 2,
    });
    expect(benchDirective(request('not json'))).toEqual({ deltas: 1, deltaMs: 0, steps: 1 });
    expect(benchDirective(request('{"deltas":-1,"steps":0,"deltaMs":1.5}'))).toEqual({
      deltas: 1,
      deltaMs: 0,
      steps: 1,
    });
    expect(benchDirective(request('{"deltas":1e9}')).deltas).toBe(100_000);
  });

  it('bench-streaming streams the asked deltas per round; bench-approval parks on its approval', async () => {
    const runner = new InProcessRunner({ agents: benchAgents(systemClock), clock: systemClock });
    const events: RunEvent[] = [];
    runner.onEvent((e) => events.push(e));
    const streamed = await runner.start({
      agent: 'bench-streaming',
      input: [{ role: 'user', content: '{"deltas":6,"steps":3}' }],
    });
    const done = await streamed.finished;
    expect(done.status).toBe('done');
    const deltas = events.filter((e) => e.runId === streamed.runId && e.type === 'text.delta');
    expect(deltas).toHaveLength(18);
    expect(done.messages.filter((m) => m.role === 'tool')).toHaveLength(2);

    // A waiting run's `finished` stays pending until it is decided: its run.finished event says it.
    const waiting = new Promise<RunEvent>((resolve) =>
      runner.onEvent((e) => {
        if (e.type === 'run.finished' && e.status === 'waiting') resolve(e);
      }),
    );
    const parked = await runner.start({
      agent: 'bench-approval',
      input: [{ role: 'user', content: '{"deltas":2}' }],
    });
    expect(await waiting).toMatchObject({ runId: parked.runId, status: 'waiting' });
  });
});
