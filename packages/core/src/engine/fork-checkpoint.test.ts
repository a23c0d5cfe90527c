import type { Checkpoint, RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { flush, runnerFor } from '../testing/fixtures.ts';
import {
  MATRIX_CASES,
  matrixAgentName,
  matrixAgents,
  payloadFor,
} from '../testing/scenario-agents.ts';
import type { InProcessRunner } from '../runner/in-process-runner.ts';
import { eventBody, firstForkSeq, forkCheckpoint } from './fork-checkpoint.ts';

/** Every checkpoint a run committed, with the seq of the last event that commit appended. */
function recordCommits(runner: InProcessRunner): { cp: Checkpoint; seq: number }[] {
  const out: { cp: Checkpoint; seq: number }[] = [];
  const store = runner.store;
  const commit = store.commit.bind(store);
  const create = store.create.bind(store);
  const lastSeq = (runId: string): number => store.events(runId).at(-1)?.seq ?? 0;
  // Synchronous wrappers: the memory store sequences inside the call, and an extra await here
  // would reorder the runner's commits.
  store.commit = (...args) => {
    const r = commit(...args);
    out.push({ cp: structuredClone(args[2]), seq: lastSeq(args[0]) });
    return r;
  };
  store.create = (...args) => {
    const r = create(...args);
    out.push({ cp: structuredClone(args[0]), seq: lastSeq(args[0].identity.runId) });
    return r;
  };
  return out;
}

const ROUND_PHASES = new Set([
  'after_inference',
  'tool_gate',
  'before_tool_execute',
  'after_tool_execute',
]);

/**
 * The parts of a checkpoint the event log determines (the rest is documented as not); the
 * phases inside a tool round are one (plan() treats them alike).
 */
function derivable(cp: Checkpoint): Record<string, unknown> {
  const {
    phase,
    identity: _identity,
    updatedAt: _updatedAt,
    inference: _inference,
    inbox: _inbox,
    usage: _usage,
    cancelRequested: _cancel,
    ...rest
  } = cp;
  // Decisions accepted but not applied yet (the inbox) are the original's: a fork waits for its own.
  const pending = new Set(cp.inbox.map((d) => d.decisionId));
  return {
    ...rest,
    decisionLog: rest.decisionLog.filter((d) => !pending.has(d.decisionId)),
    phase: ROUND_PHASES.has(phase) ? 'round' : phase,
  };
}

async function runMatrixCase(
  runner: InProcessRunner,
  agent: string,
  payload: unknown,
): Promise<string> {
  const { runId, finished } = await runner.start({
    agent,
    input: [{ role: 'user', content: 'go' }],
  });
  await flush();
  const decide = (id: string) => ({
    decisionId: `d-${id}`,
    toolCallId: id,
    action: 'resume' as const,
    ...(payload === undefined ? {} : { payload: payload as never }),
  });
  await runner.submitDecisions(runId, [decide('S1')]);
  await flush();
  await runner.submitDecisions(runId, [decide('S2')]);
  await finished;
  return runId;
}

describe('forkCheckpoint', () => {
  it.each(MATRIX_CASES)(
    '%s × %s × %s: the fold at every commit is the checkpoint that commit wrote',
    async (mode, policy, resume) => {
      const agents = matrixAgents();
      const { runner } = runnerFor(...agents);
      const commits = recordCommits(runner);
      const name = matrixAgentName(mode, policy, resume);
      const runId = await runMatrixCase(runner, name, payloadFor(resume));
      const events = runner.events(runId);
      const spec = agents.find((a) => a.name === name);
      if (!spec) throw new Error('no agent');
      const final = await runner.checkpoint(runId);
      if (!final) throw new Error('no run');
      const min = firstForkSeq(events) ?? Infinity;
      let compared = 0;
      for (const { cp, seq } of commits) {
        if (seq < min) continue;
        const identity = { ...cp.identity, runId: 'fork', threadId: 'fork-thread' };
        const folded = forkCheckpoint(
          spec,
          { checkpoint: final, events },
          {
            atSeq: seq,
            identity,
            ...(cp.status === 'done' ? { input: [{ role: 'user', content: 'more' }] } : {}),
          },
        );
        if (cp.status === 'done') continue;
        expect(folded.kind).toBe('forked');
        if (folded.kind !== 'forked') continue;
        expect(derivable(folded.checkpoint)).toEqual(derivable(cp));
        expect(folded.events).toEqual(events.filter((e) => e.seq <= seq).map(eventBody));
        compared += 1;
      }
      expect(compared).toBeGreaterThan(2);
    },
  );

  it('refuses a seq before the run started or after its last event, and input mid-round', async () => {
    const agents = matrixAgents();
    const { runner } = runnerFor(...agents);
    const name = matrixAgentName('parallel_streaming', 'immediate', 'replay_tool_call');
    const runId = await runMatrixCase(runner, name, undefined);
    const events = runner.events(runId);
    const final = await runner.checkpoint(runId);
    const spec = agents.find((a) => a.name === name);
    if (!final || !spec) throw new Error('no run');
    const identity = { ...final.identity, runId: 'fork' };
    const source = { checkpoint: final, events };
    expect(forkCheckpoint(spec, source, { atSeq: 1, identity }).kind).toBe('seq_out_of_range');
    expect(forkCheckpoint(spec, source, { atSeq: events.length + 1, identity }).kind).toBe(
      'seq_out_of_range',
    );
    const created = events.find((e) => e.type === 'tool_call.created');
    const midRound = forkCheckpoint(spec, source, {
      atSeq: created?.seq ?? 0,
      identity,
      input: [{ role: 'user', content: 'x' }],
    });
    expect(midRound.kind).toBe('input_refused');
    expect(forkCheckpoint(spec, source, { atSeq: events.length, identity }).kind).toBe(
      'input_required',
    );
  });

  it('reopens a finished run with input: the new message follows the whole conversation', async () => {
    const agents = matrixAgents();
    const { runner } = runnerFor(...agents);
    const name = matrixAgentName('sequential', 'immediate', 'replay_tool_call');
    const runId = await runMatrixCase(runner, name, undefined);
    const cp = await runner.checkpoint(runId);
    const spec = agents.find((a) => a.name === name);
    if (!cp || !spec) throw new Error('no run');
    expect(cp.status).toBe('done');
    const events: RunEvent[] = runner.events(runId);
    const forked = forkCheckpoint(
      spec,
      { checkpoint: cp, events },
      {
        atSeq: events.length,
        identity: { ...cp.identity, runId: 'fork' },
        input: [{ role: 'user', content: 'and again' }],
      },
    );
    if (forked.kind !== 'forked') throw new Error(forked.kind);
    expect(forked.checkpoint.status).toBe('running');
    expect(forked.checkpoint.phase).toBe('step_end');
    expect(forked.checkpoint.messages.slice(0, cp.messages.length)).toEqual(cp.messages);
    expect(forked.checkpoint.messages.at(-1)?.content).toBe('and again');
    expect(forked.events.slice(events.length).map((e) => e.type)).toEqual([
      'run.status',
      'message.input',
    ]);
  });
});
