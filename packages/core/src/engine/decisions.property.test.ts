import type {
  Checkpoint,
  Decision,
  EventBody,
  ExecutionMode,
  JsonValue,
  RunStatus,
  ToolCallStatus,
  ToolExecutionResult,
  ToolResult,
} from '@baton/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentDefinition } from '../agent.ts';
import { BatonError } from '../errors.ts';
import type { InferenceResponse } from '../model.ts';
import { ScriptedModel } from '../model/scripted-model.ts';
import { canTransitionRun } from '../run-status.ts';
import { TOOL_CALL_TRANSITIONS } from '../tool-call-status.ts';
import { defineTool, toolResult } from '../tools.ts';
import { Engine, type Transition } from './engine.ts';
import type { ToolInvocation } from './tool-round.ts';

// ---------------------------------------------------------------------------------------------
// Fixture: two approval-gated tools; "edit" also demands a decision payload of shape { ok: boolean }.

const approve = defineTool({
  name: 'approve',
  description: 'needs approval',
  inputSchema: z.object({ n: z.number() }),
  approval: {},
  execute: (args) => Promise.resolve(toolResult.success({ n: args.n })),
});
const edit = defineTool({
  name: 'edit',
  description: 'needs approval with an answer',
  inputSchema: z.object({ n: z.number() }),
  approval: {
    message: (args) => `edit ${JSON.stringify(args.n)}?`,
    responseSchema: z.object({ ok: z.boolean() }),
  },
  execute: (args) => Promise.resolve(toolResult.success({ n: args.n })),
});

const agent: AgentDefinition = {
  name: 'decider',
  model: new ScriptedModel([]),
  tools: [approve, edit],
};

function callId(step: number, index: number): string {
  return `s${step}_c${index}`;
}

function toolNameFor(index: number): 'approve' | 'edit' {
  return index % 2 === 0 ? 'approve' : 'edit';
}

/** The model's answer at a step: `sizes[step-1]` calls, or a final text once the sizes run out. */
function responseFor(step: number, sizes: readonly number[]): InferenceResponse {
  const n = sizes[step - 1] ?? 0;
  return {
    text: n === 0 ? 'finished' : `step ${step}`,
    toolCalls: Array.from({ length: n }, (_, i) => ({
      id: callId(step, i),
      name: toolNameFor(i),
      arguments: { n: i },
    })),
    usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    finishReason: n === 0 ? 'stop' : 'tool-calls',
  };
}

const IDENTITY = {
  runId: 'run-1',
  threadId: 'th-1',
  turnId: 't-1',
  tenantId: 'tn',
  agent: 'decider',
};

/** Creates a run and drives it until its first round of approval calls has suspended. */
function suspendedRun(
  engine: Engine,
  mode: ExecutionMode,
  n: number,
): { cp: Checkpoint; events: EventBody[] } {
  const events: EventBody[] = [];
  let t: Transition = engine.create(
    {
      identity: IDENTITY,
      input: [{ role: 'user', content: 'go' }],
      options: { executionMode: mode },
    },
    0,
  );
  events.push(...t.events);
  t = engine.start(t.checkpoint, 1);
  events.push(...t.events);
  t = engine.beginStep(t.checkpoint, 2);
  events.push(...t.events);
  t = engine.commitInference(t.checkpoint, responseFor(1, [n]), 3);
  events.push(...t.events);
  t = engine.prepareTools(t.checkpoint, 4);
  events.push(...t.events);
  return { cp: t.checkpoint, events };
}

// ---------------------------------------------------------------------------------------------
// An independent statement of what receiveDecisions must do with a batch.

type Expected =
  { ok: true; accepted: string[]; duplicates: string[] } | { ok: false; code: string };

function validEditPayload(payload: JsonValue | undefined): boolean {
  return (
    typeof payload === 'object' &&
    payload !== null &&
    !Array.isArray(payload) &&
    Object.keys(payload).length === 1 &&
    typeof payload.ok === 'boolean'
  );
}

function sameContent(a: Decision, b: Decision): boolean {
  return (
    a.toolCallId === b.toolCallId &&
    a.action === b.action &&
    JSON.stringify(a.payload ?? null) === JSON.stringify(b.payload ?? null)
  );
}

function expectedReceive(cp: Checkpoint, batch: readonly Decision[]): Expected {
  // First every id is checked against what was seen (the log, then earlier in the batch): a
  // resent decision is a duplicate whatever the run's state, a reused id with another body a
  // conflict.
  const known = new Map<string, Decision>(cp.decisionLog.map((d) => [d.decisionId, d]));
  const duplicates: string[] = [];
  const fresh: Decision[] = [];
  for (const d of batch) {
    const previous = known.get(d.decisionId);
    if (previous) {
      if (!sameContent(previous, d)) return { ok: false, code: 'decision_conflict' };
      duplicates.push(d.decisionId);
      continue;
    }
    known.set(d.decisionId, d);
    fresh.push(d);
  }
  if (fresh.length === 0 && batch.length > 0) return { ok: true, accepted: [], duplicates };
  if (cp.status === 'done') return { ok: false, code: 'run_done' };
  if (cp.cancelRequested) return { ok: false, code: 'run_cancelled' };
  const claimed = new Set(cp.inbox.map((d) => d.toolCallId));
  const accepted: string[] = [];
  for (const d of fresh) {
    const call = Object.hasOwn(cp.calls, d.toolCallId) ? cp.calls[d.toolCallId] : undefined;
    if (!call) return { ok: false, code: 'call_unknown' };
    if (claimed.has(call.id)) return { ok: false, code: 'decision_conflict' };
    if (call.status !== 'suspended') return { ok: false, code: 'call_not_suspended' };
    // Only edit's approval ticket carries a schema ({ ok: boolean }); a re-suspension after a
    // Pending result carries the tool's own ticket, which has none. A plain approval
    // (replay_tool_call) may omit the payload; a given payload must match the schema.
    const hasSchema = call.ticket?.reason === 'approval' && call.name === 'edit';
    if (
      d.action === 'resume' &&
      hasSchema &&
      d.payload !== undefined &&
      !validEditPayload(d.payload)
    )
      return { ok: false, code: 'payload_invalid' };
    claimed.add(call.id);
    accepted.push(d.decisionId);
  }
  return { ok: true, accepted, duplicates };
}

// ---------------------------------------------------------------------------------------------
// Arbitraries.

const MODES: readonly ExecutionMode[] = [
  'sequential',
  'parallel_batch_approval',
  'parallel_streaming',
];

const payloadArb = fc.constantFrom<JsonValue | undefined>(
  undefined,
  undefined,
  { ok: true },
  { ok: false },
  { ok: 'no' },
  'text',
);

/** Where a decision points: mostly a call of the current round (resolved when sent), else any id. */
type Target = { round: number } | { id: string };

interface DecisionSpec {
  readonly decisionId: string;
  readonly target: Target;
  readonly action: 'resume' | 'cancel';
  readonly payload: JsonValue | undefined;
}

const decisionArb: fc.Arbitrary<DecisionSpec> = fc.record({
  // A few hot ids (repeats, in and across batches) and many fresh ones (progress).
  decisionId: fc.oneof(
    fc.constantFrom('d0', 'd1', 'd2'),
    fc.nat(40).map((n) => `x${n}`),
  ),
  target: fc.oneof(
    { weight: 3, arbitrary: fc.nat(3).map((round): Target => ({ round })) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc
            .tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 3 }))
            .map(([s, i]) => callId(s, i)),
          fc.constant('ghost'),
        )
        .map((id): Target => ({ id })),
    },
  ),
  action: fc.constantFrom<'resume' | 'cancel'>('resume', 'cancel', 'resume'),
  payload: payloadArb,
});

function resolve(spec: DecisionSpec, cp: Checkpoint): Decision {
  const toolCallId =
    'id' in spec.target
      ? spec.target.id
      : (cp.round[spec.target.round % Math.max(1, cp.round.length)] ?? 'ghost');
  const base: Decision = { decisionId: spec.decisionId, toolCallId, action: spec.action };
  return spec.payload === undefined ? base : { ...base, payload: spec.payload };
}

type Op =
  | { kind: 'decide'; batch: DecisionSpec[] }
  /** A well-formed answer for every suspended call of the round (fresh ids), so runs progress. */
  | { kind: 'answer'; actions: ('resume' | 'cancel')[] }
  | { kind: 'advance' }
  | { kind: 'complete'; result: 'success' | 'error' | 'pending' }
  | { kind: 'cancel' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .array(decisionArb, { minLength: 1, maxLength: 4 })
      .map((batch): Op => ({ kind: 'decide', batch })),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.constantFrom<'resume' | 'cancel'>('resume', 'resume', 'cancel'), {
        minLength: 4,
        maxLength: 4,
      })
      .map((actions): Op => ({ kind: 'answer', actions })),
  },
  { weight: 5, arbitrary: fc.constant<Op>({ kind: 'advance' }) },
  {
    weight: 5,
    arbitrary: fc
      .constantFrom('success', 'error', 'pending', 'success')
      .map((result): Op => ({ kind: 'complete', result })),
  },
);

// ---------------------------------------------------------------------------------------------
// A tracker that replays the event log and checks every status change.

class Tracker {
  readonly calls = new Map<string, ToolCallStatus>();
  run: RunStatus = 'created';
  readonly changes: string[] = [];

  observe(events: readonly EventBody[]): void {
    for (const e of events) {
      if (e.type === 'tool_call.created') {
        expect(this.calls.has(e.toolCallId)).toBe(false);
        this.calls.set(e.toolCallId, 'new');
      } else if (e.type === 'tool_call.status') {
        const before = this.calls.get(e.toolCallId);
        expect(before, `status event for untracked call ${e.toolCallId}`).toBeDefined();
        expect(e.from).toBe(before);
        expect(TOOL_CALL_TRANSITIONS[e.from], `${e.toolCallId}: ${e.from} -> ${e.to}`).toContain(
          e.to,
        );
        this.calls.set(e.toolCallId, e.to);
        this.changes.push(`${e.from}->${e.to}`);
      } else if (e.type === 'run.status') {
        expect(e.from).toBe(this.run);
        expect(canTransitionRun(e.from, e.to)).toBe(true);
        this.run = e.to;
      }
    }
  }

  /** The checkpoint agrees with the event log, for every call of the current round. */
  check(cp: Checkpoint): void {
    expect(cp.status).toBe(this.run);
    for (const call of Object.values(cp.calls)) expect(call.status).toBe(this.calls.get(call.id));
  }
}

const TERMINAL = new Set<ToolCallStatus>(['succeeded', 'failed', 'cancelled']);
const ERROR_CODES = new Set([
  'run_done',
  'run_cancelled',
  'call_unknown',
  'call_not_suspended',
  'decision_conflict',
  'payload_invalid',
]);

function resultOf(kind: 'success' | 'error' | 'pending'): ToolResult {
  if (kind === 'success') return toolResult.success('ok');
  if (kind === 'error') return toolResult.error('broke');
  return toolResult.pending({ reason: 'input', message: 'more?', resumeMode: 'replay_tool_call' });
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

// ---------------------------------------------------------------------------------------------

describe('decisions: state machine safety (property)', () => {
  it('no call leaves a terminal state and every status change is a legal transition', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MODES),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 }),
        fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }),
        // An external cancel request at one point of the sequence, or none.
        fc.option(fc.nat(60), { freq: 3 }),
        (mode, sizes, script, cancelAt) => {
          const ops: Op[] = [...script];
          if (cancelAt !== null) ops.splice(cancelAt, 0, { kind: 'cancel' });
          const engine = new Engine(agent);
          const tracker = new Tracker();
          let now = 0;
          let cp: Checkpoint | null = null;
          const apply = (produce: (input: Checkpoint) => Transition): Transition => {
            const input = cp!;
            const before = structuredClone(input);
            const t = produce(input);
            // Pure: the input checkpoint is never mutated, whatever the transition did.
            expect(input).toEqual(before);
            const terminalBefore = new Map([...tracker.calls].filter(([, s]) => TERMINAL.has(s)));
            tracker.observe(t.events);
            for (const [id, status] of terminalBefore) expect(tracker.calls.get(id)).toBe(status);
            cp = t.checkpoint;
            tracker.check(cp);
            return t;
          };
          // Start from the first round's approval calls suspended (run waiting).
          const initial = suspendedRun(engine, mode, sizes[0]!);
          tracker.observe(initial.events);
          cp = initial.cp;
          now = 10;
          tracker.check(cp);
          expect(cp.status).toBe('waiting');
          let pending: ToolInvocation[] = [];
          let fresh = 0;

          for (const op of ops) {
            now += 1;
            const current: Checkpoint = cp;
            switch (op.kind) {
              case 'answer':
              case 'decide': {
                const batch =
                  op.kind === 'decide'
                    ? op.batch.map((spec) => resolve(spec, current))
                    : current.round
                        .filter((id) => current.calls[id]?.status === 'suspended')
                        .map((toolCallId, i): Decision => {
                          const action = op.actions[i % op.actions.length]!;
                          fresh += 1;
                          return action === 'resume' && current.calls[toolCallId]?.name === 'edit'
                            ? { decisionId: `a${fresh}`, toolCallId, action, payload: { ok: true } }
                            : { decisionId: `a${fresh}`, toolCallId, action };
                        });
                const expected = expectedReceive(current, batch);
                const before = structuredClone(current);
                let result:
                  (Transition & { accepted: Decision[]; duplicates: string[] }) | undefined;
                let error: unknown;
                try {
                  result = engine.receiveDecisions(current, batch, now);
                } catch (e) {
                  error = e;
                }
                expect(current).toEqual(before);
                if (error !== undefined) {
                  expect(error).toBeInstanceOf(BatonError);
                  const code = (error as BatonError).code;
                  expect(ERROR_CODES.has(code)).toBe(true);
                  expect(expected).toEqual({ ok: false, code });
                  break;
                }
                expect(expected).toEqual({
                  ok: true,
                  accepted: result!.accepted.map((d) => d.decisionId),
                  duplicates: result!.duplicates,
                });
                expect(result!.events).toEqual([]);
                expect(result!.checkpoint.inbox).toEqual([...current.inbox, ...result!.accepted]);
                expect(result!.checkpoint.decisionLog).toEqual([
                  ...current.decisionLog,
                  ...result!.accepted,
                ]);
                cp = result!.checkpoint;
                // The RESUME gate runs as soon as the plan allows it.
                if (engine.plan(cp).kind === 'resume') apply((c) => engine.applyDecisions(c, now));
                break;
              }
              case 'cancel':
                apply((c) => engine.requestCancel(c, now));
                break;
              case 'complete': {
                const inv = pending.shift();
                if (!inv) break;
                const r: ToolExecutionResult = {
                  toolCallId: inv.toolCallId,
                  attempt: inv.attempt,
                  result: resultOf(op.result),
                  patches: [],
                  startedAt: now,
                  finishedAt: now,
                };
                apply((c) => engine.applyToolResults(c, [r], now));
                break;
              }
              case 'advance': {
                const next = engine.plan(current);
                switch (next.kind) {
                  case 'start':
                    apply((c) => engine.start(c, now));
                    break;
                  case 'step':
                    pending = [];
                    apply((c) => engine.beginStep(c, now));
                    break;
                  case 'infer':
                    apply((c) => engine.commitInference(c, responseFor(c.step, sizes), now));
                    break;
                  case 'execute': {
                    const t = apply((c) => engine.prepareTools(c, now)) as ReturnType<
                      Engine['prepareTools']
                    >;
                    for (const inv of t.invocations)
                      if (
                        !pending.some(
                          (p) => p.toolCallId === inv.toolCallId && p.attempt === inv.attempt,
                        )
                      )
                        pending.push(inv);
                    break;
                  }
                  case 'resume':
                    apply((c) => engine.applyDecisions(c, now));
                    break;
                  case 'finish_step':
                    apply((c) => engine.finishStep(c, now));
                    break;
                  case 'cancel':
                    apply((c) => engine.cancel(c, now));
                    break;
                  case 'wait':
                  case 'done':
                    break;
                }
                break;
              }
            }
            // A done run stays done with no open calls.
            if (cp.status === 'done') {
              for (const call of Object.values(cp.calls))
                expect(TERMINAL.has(call.status)).toBe(true);
              expect(cp.inbox).toEqual([]);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('decisions: idempotency (property)', () => {
  it('a repeated decisionId with the same content is a no-op, with other content a conflict', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<ExecutionMode>('parallel_batch_approval', 'parallel_streaming'),
        fc.integer({ min: 1, max: 4 }),
        fc.subarray([0, 1, 2, 3], { minLength: 1 }),
        fc.boolean(),
        (mode, n, picks, applyFirst) => {
          const engine = new Engine(agent);
          const { cp: suspended } = suspendedRun(engine, mode, n);
          expect(suspended.status).toBe('waiting');
          const targets = picks.filter((i) => i < n);
          fc.pre(targets.length > 0);
          const batch: Decision[] = targets.map((i) =>
            toolNameFor(i) === 'edit'
              ? {
                  decisionId: `d${i}`,
                  toolCallId: callId(1, i),
                  action: 'resume',
                  payload: { ok: true },
                }
              : { decisionId: `d${i}`, toolCallId: callId(1, i), action: 'cancel' },
          );
          const first = engine.receiveDecisions(suspended, batch, 10);
          expect(first.accepted).toEqual(batch);
          expect(first.duplicates).toEqual([]);
          let cp = first.checkpoint;
          // A duplicate stays a no-op after its decision was applied (the call is no longer suspended).
          if (applyFirst) cp = engine.applyDecisions(cp, 11).checkpoint;
          const snapshot = structuredClone(cp);

          const again = engine.receiveDecisions(cp, [...batch].reverse(), 12);
          expect(again.accepted).toEqual([]);
          expect(again.duplicates).toEqual(batch.map((d) => d.decisionId).reverse());
          expect(again.events).toEqual([]);
          expect(again.checkpoint.inbox).toEqual(snapshot.inbox);
          expect(again.checkpoint.decisionLog).toEqual(snapshot.decisionLog);
          expect(again.checkpoint.calls).toEqual(snapshot.calls);
          expect(cp).toEqual(snapshot);

          for (const d of batch) {
            const variants: Decision[] = [
              { ...d, action: d.action === 'resume' ? 'cancel' : 'resume', payload: { ok: true } },
              { ...d, payload: { ok: false } },
              { ...d, toolCallId: d.toolCallId === callId(1, 0) ? 'ghost' : callId(1, 0) },
            ];
            for (const variant of variants) {
              const error = caught(() => engine.receiveDecisions(cp, [variant], 13));
              expect(error).toBeInstanceOf(BatonError);
              expect((error as BatonError).code).toBe('decision_conflict');
              expect((error as BatonError).details).toEqual({ decisionId: d.decisionId });
              expect(cp).toEqual(snapshot);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a decisionId repeated inside one batch is accepted once (same content) or rejected (other content)', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_streaming', 2);
    const d: Decision = { decisionId: 'dup', toolCallId: callId(1, 0), action: 'resume' };
    const same = engine.receiveDecisions(cp, [d, d], 10);
    expect(same.accepted).toEqual([d]);
    expect(same.duplicates).toEqual(['dup']);
    expect(same.checkpoint.inbox).toEqual([d]);
    expect(same.checkpoint.decisionLog).toEqual([d]);

    const other: Decision = { decisionId: 'dup', toolCallId: callId(1, 1), action: 'cancel' };
    const before = structuredClone(cp);
    const error = caught(() => engine.receiveDecisions(cp, [d, other], 10));
    expect((error as BatonError).code).toBe('decision_conflict');
    expect(cp).toEqual(before);
  });
});

describe('decisions: typed rejections leave the checkpoint untouched', () => {
  function rejectWith(cp: Checkpoint, engine: Engine, batch: Decision[], code: string): BatonError {
    const before = structuredClone(cp);
    const error = caught(() => engine.receiveDecisions(cp, batch, 50));
    expect(error).toBeInstanceOf(BatonError);
    expect((error as BatonError).code).toBe(code);
    expect(cp).toEqual(before);
    return error as BatonError;
  }

  it('call_not_suspended for a call that is new (sequential tail) or already settled', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'sequential', 3);
    expect(cp.status).toBe('waiting');
    expect(cp.round.map((id) => cp.calls[id]?.status)).toEqual(['suspended', 'new', 'new']);
    const err = rejectWith(
      cp,
      engine,
      [{ decisionId: 'x', toolCallId: callId(1, 1), action: 'resume' }],
      'call_not_suspended',
    );
    expect(err.details).toEqual({ toolCallId: callId(1, 1), status: 'new' });

    const cancelled = engine.applyDecisions(
      engine.receiveDecisions(
        cp,
        [{ decisionId: 'c', toolCallId: callId(1, 0), action: 'cancel' }],
        51,
      ).checkpoint,
      52,
    ).checkpoint;
    expect(cancelled.calls[callId(1, 0)]?.status).toBe('cancelled');
    rejectWith(
      cancelled,
      engine,
      [{ decisionId: 'y', toolCallId: callId(1, 0), action: 'resume' }],
      'call_not_suspended',
    );
  });

  it('call_unknown for a call that is not in the round', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_batch_approval', 2);
    const err = rejectWith(
      cp,
      engine,
      [{ decisionId: 'x', toolCallId: 'nope', action: 'cancel' }],
      'call_unknown',
    );
    expect(err.details).toEqual({ toolCallId: 'nope' });
  });

  it('call_unknown for any id that names a prototype member rather than a call', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_batch_approval', 2);
    const prototypeKeys = [
      ...Object.getOwnPropertyNames(Object.prototype),
      ...Object.getOwnPropertyNames(Array.prototype),
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...prototypeKeys),
        fc.constantFrom('resume', 'cancel'),
        (id, action) => {
          const err = rejectWith(
            cp,
            engine,
            [{ decisionId: 'x', toolCallId: id, action }],
            'call_unknown',
          );
          expect(err.details).toEqual({ toolCallId: id });
        },
      ),
    );
  });

  it('run_done once the run has finished', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_streaming', 2);
    const done = engine.cancel(cp, 60).checkpoint;
    expect(done.status).toBe('done');
    expect(done.termination).toEqual({ kind: 'cancelled' });
    expect(Object.values(done.calls).map((c) => c.status)).toEqual(['cancelled', 'cancelled']);
    rejectWith(
      done,
      engine,
      [{ decisionId: 'x', toolCallId: callId(1, 0), action: 'resume' }],
      'run_done',
    );
    // An empty batch has nothing to resend: refused like a new decision.
    rejectWith(done, engine, [], 'run_done');
  });

  it('decision_conflict for a second decision on a call with one in the inbox', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_batch_approval', 2);
    const first = engine.receiveDecisions(
      cp,
      [{ decisionId: 'a', toolCallId: callId(1, 0), action: 'resume' }],
      10,
    );
    // Batch policy: one of two suspended calls answered, nothing is applied yet.
    expect(engine.plan(first.checkpoint).kind).toBe('wait');
    const err = rejectWith(
      first.checkpoint,
      engine,
      [{ decisionId: 'b', toolCallId: callId(1, 0), action: 'cancel' }],
      'decision_conflict',
    );
    expect(err.details).toEqual({ toolCallId: callId(1, 0), decisionId: 'a' });
  });

  it('payload_invalid when a resume payload does not match the ticket schema', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_streaming', 2);
    expect(cp.calls[callId(1, 1)]?.ticket?.message).toBe('edit 1?');
    rejectWith(
      cp,
      engine,
      [{ decisionId: 'p', toolCallId: callId(1, 1), action: 'resume', payload: { ok: 1 } }],
      'payload_invalid',
    );
    rejectWith(
      cp,
      engine,
      [
        {
          decisionId: 'p',
          toolCallId: callId(1, 1),
          action: 'resume',
          payload: { ok: true, more: 1 },
        },
      ],
      'payload_invalid',
    );
    // A plain approval (replay_tool_call) may omit the payload, and a cancel needs none.
    expect(
      engine.receiveDecisions(
        cp,
        [{ decisionId: 'p', toolCallId: callId(1, 1), action: 'resume' }],
        10,
      ).accepted,
    ).toHaveLength(1);
    expect(
      engine.receiveDecisions(
        cp,
        [{ decisionId: 'p', toolCallId: callId(1, 1), action: 'cancel' }],
        10,
      ).accepted,
    ).toHaveLength(1);
  });

  it('payload_invalid when a client tool answer is missing or malformed', () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'runs on the client',
      inputSchema: z.object({ n: z.number() }),
      clientSide: { outputSchema: z.object({ value: z.string() }) },
    });
    const engine = new Engine({ name: 'client', model: new ScriptedModel([]), tools: [lookup] });
    let t: Transition = engine.create(
      { identity: IDENTITY, input: [{ role: 'user', content: 'go' }] },
      0,
    );
    t = engine.start(t.checkpoint, 1);
    t = engine.beginStep(t.checkpoint, 2);
    t = engine.commitInference(
      t.checkpoint,
      {
        text: '',
        toolCalls: [{ id: 'c', name: 'lookup', arguments: { n: 1 } }],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        finishReason: 'tool-calls',
      },
      3,
    );
    const cp = engine.prepareTools(t.checkpoint, 4).checkpoint;
    expect(cp.calls.c?.ticket?.resumeMode).toBe('use_decision_as_tool_result');
    rejectWith(
      cp,
      engine,
      [{ decisionId: 'p', toolCallId: 'c', action: 'resume' }],
      'payload_invalid',
    );
    rejectWith(
      cp,
      engine,
      [{ decisionId: 'p', toolCallId: 'c', action: 'resume', payload: { value: 1 } }],
      'payload_invalid',
    );
    const ok = engine.receiveDecisions(
      cp,
      [{ decisionId: 'p', toolCallId: 'c', action: 'resume', payload: { value: 'v' } }],
      5,
    );
    // The answer becomes the result without executing anything.
    const applied = engine.applyDecisions(ok.checkpoint, 6);
    const replayed = engine.prepareTools(applied.checkpoint, 7);
    expect(replayed.invocations).toEqual([]);
    expect(replayed.checkpoint.calls.c).toMatchObject({
      status: 'succeeded',
      outcome: { status: 'succeeded', output: { value: 'v' } },
    });
  });

  it('a batch with one bad decision rejects the valid ones too', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_streaming', 3);
    const good: Decision = { decisionId: 'g', toolCallId: callId(1, 0), action: 'resume' };
    for (const [bad, code] of [
      [{ decisionId: 'b', toolCallId: 'ghost', action: 'resume' }, 'call_unknown'],
      [{ decisionId: 'b', toolCallId: callId(1, 0), action: 'cancel' }, 'decision_conflict'],
      [
        { decisionId: 'b', toolCallId: callId(1, 1), action: 'resume', payload: 'x' },
        'payload_invalid',
      ],
    ] as const) {
      rejectWith(cp, engine, [good, bad], code);
    }
    expect(cp.inbox).toEqual([]);
    expect(cp.decisionLog).toEqual([]);
  });

  it('accepted decisions apply per policy: resume replays, cancel settles', () => {
    const engine = new Engine(agent);
    const { cp } = suspendedRun(engine, 'parallel_batch_approval', 2);
    const received = engine.receiveDecisions(
      cp,
      [
        { decisionId: 'a', toolCallId: callId(1, 0), action: 'resume', payload: 'note' },
        { decisionId: 'b', toolCallId: callId(1, 1), action: 'cancel' },
      ],
      10,
    );
    expect(engine.plan(received.checkpoint).kind).toBe('resume');
    const applied = engine.applyDecisions(received.checkpoint, 11);
    const a = applied.checkpoint.calls[callId(1, 0)]!;
    const b = applied.checkpoint.calls[callId(1, 1)]!;
    expect(a).toMatchObject({
      status: 'resuming',
      attempt: 1,
      decisionId: 'a',
      resumePayload: 'note',
      replayOrigin: 'waiting',
      replayArguments: { n: 0 },
    });
    expect(b).toMatchObject({
      status: 'cancelled',
      decisionId: 'b',
      outcome: { status: 'cancelled', error: 'cancelled by decision' },
    });
    expect(applied.checkpoint.status).toBe('running');
    expect(applied.checkpoint.inbox).toEqual([]);
    expect(applied.trigger).toBe('run_start_replay');
    expect(applied.events.filter((e) => e.type === 'decision.applied')).toHaveLength(2);
    expect(engine.plan(applied.checkpoint).kind).toBe('execute');
    // applyDecisions with nothing applicable changes nothing but the timestamp.
    const idle = engine.applyDecisions(applied.checkpoint, 12);
    expect(idle.events).toEqual([]);
    expect({ ...idle.checkpoint, updatedAt: 0 }).toEqual({ ...applied.checkpoint, updatedAt: 0 });
  });
});
