import type {
  Checkpoint,
  Decision,
  EventBody,
  CheckpointTrigger,
  ToolExecutionResult,
} from '@baton/protocol';
import type { AgentDefinition } from '../agent.ts';
import type { InferenceRequest, InferenceResponse } from '../model.ts';
import { buildEngineContext, specContext, type EngineContext } from './context.ts';
import type { AgentSpec } from '../agent.ts';
import { applyDecisions, receiveDecisions, type ReceiveResult } from './decisions.ts';
import { expireDeadline, type DeadlineExpiry } from './deadlines.ts';
import { Draft } from './draft.ts';
import { beginStep, buildInferenceRequest, commitInference } from './inference.ts';
import { createCheckpoint, finishRun, startRun, type CreateRunInput } from './lifecycle.ts';
import { plan, type Plan } from './plan.ts';
import { completeToolRound } from './step-end.ts';
import { applyToolResults, prepareTools, type ToolInvocation } from './tool-round.ts';

/** A pure step: the checkpoint to commit, the events to append with it, and what comes next. */
export interface Transition {
  readonly checkpoint: Checkpoint;
  readonly events: readonly EventBody[];
  readonly trigger: CheckpointTrigger | null;
  readonly next: Plan;
}

/**
 * The durable cancel request, itself an event. A run no worker has started yet is finished right
 * here; a running or waiting one is told to stop at its next phase boundary.
 */
function requestCancel(draft: Draft): Draft {
  const { cp } = draft;
  if (cp.status === 'done' || cp.cancelRequested) return draft;
  cp.cancelRequested = true;
  draft.emit({ type: 'run.cancel_requested' });
  if (cp.status === 'created') return finishRun(draft, { kind: 'cancelled' });
  return draft;
}

function done(draft: Draft): Transition {
  return {
    checkpoint: draft.cp,
    events: draft.events,
    trigger: draft.trigger,
    next: plan(draft.cp),
  };
}

/**
 * The run engine as pure functions of (checkpoint, inputs, now). Drivers (the in-process runner,
 * the distributed worker) perform the effects these ask for and commit what they return.
 */
export class Engine {
  readonly agent: AgentDefinition;
  readonly ctx: EngineContext;

  constructor(agent: AgentDefinition) {
    this.agent = agent;
    this.ctx = buildEngineContext(agent);
  }

  create(input: CreateRunInput, now: number): Transition {
    return done(createCheckpoint(this.ctx, input, now));
  }

  plan(cp: Checkpoint): Plan {
    return plan(cp);
  }

  start(cp: Checkpoint, now: number): Transition {
    return done(startRun(new Draft(this.ctx, cp, now)));
  }

  beginStep(cp: Checkpoint, now: number): Transition {
    return done(beginStep(new Draft(this.ctx, cp, now)));
  }

  inferenceRequest(cp: Checkpoint): InferenceRequest {
    return buildInferenceRequest({ cp, ctx: this.ctx });
  }

  commitInference(cp: Checkpoint, response: InferenceResponse, now: number): Transition {
    return done(commitInference(new Draft(this.ctx, cp, now), response));
  }

  prepareTools(
    cp: Checkpoint,
    now: number,
  ): Transition & { readonly invocations: readonly ToolInvocation[] } {
    const { draft, invocations } = prepareTools(new Draft(this.ctx, cp, now));
    return { ...done(draft), invocations };
  }

  applyToolResults(
    cp: Checkpoint,
    results: readonly ToolExecutionResult[],
    now: number,
  ): Transition {
    return done(applyToolResults(new Draft(this.ctx, cp, now), results));
  }

  finishStep(cp: Checkpoint, now: number): Transition {
    return done(completeToolRound(new Draft(this.ctx, cp, now)));
  }

  /** Validates and stores decisions in the inbox; throws a typed error and changes nothing when invalid. */
  receiveDecisions(
    cp: Checkpoint,
    decisions: readonly Decision[],
    now: number,
  ): Transition & ReceiveResult {
    const draft = new Draft(this.ctx, cp, now);
    const result = receiveDecisions(draft, decisions);
    return { ...done(draft), ...result };
  }

  applyDecisions(cp: Checkpoint, now: number): Transition {
    return done(applyDecisions(new Draft(this.ctx, cp, now)));
  }

  /** Durable cancel request; honored by cancel() at the next boundary (or at once when idle). */
  requestCancel(cp: Checkpoint, now: number): Transition {
    return done(requestCancel(new Draft(this.ctx, cp, now)));
  }

  cancel(cp: Checkpoint, now: number): Transition {
    const draft = new Draft(this.ctx, cp, now);
    if (draft.cp.status === 'done') return done(draft);
    return done(finishRun(draft, { kind: 'cancelled' }));
  }

  /** Runtime-level failure (seed: executor failure, patch apply failure, commit failure). */
  fail(cp: Checkpoint, message: string, now: number): Transition {
    const draft = new Draft(this.ctx, cp, now);
    if (draft.cp.status === 'done') return done(draft);
    return done(finishRun(draft, { kind: 'error', message }));
  }
}

/**
 * The engine operations that need only agent data (the API creates runs, accepts decisions and
 * cancels without importing agent code; workers advertise the specs).
 */
export const runCommands = {
  create(spec: AgentSpec, input: CreateRunInput, now: number): Transition {
    return done(createCheckpoint(specContext(spec), input, now));
  },
  receiveDecisions(
    cp: Checkpoint,
    decisions: readonly Decision[],
    now: number,
  ): Transition & ReceiveResult {
    const draft = new Draft(specContext({ name: cp.identity.agent }), cp, now);
    const result = receiveDecisions(draft, decisions);
    return { ...done(draft), ...result };
  },
  /** Ends a run with Error where its agent's code is not available (e.g. an unknown agent). */
  fail(cp: Checkpoint, message: string, now: number): Transition {
    const draft = new Draft(specContext({ name: cp.identity.agent }), cp, now);
    if (draft.cp.status === 'done') return done(draft);
    return done(finishRun(draft, { kind: 'error', message }));
  },
  requestCancel(cp: Checkpoint, now: number): Transition {
    return done(requestCancel(new Draft(specContext({ name: cp.identity.agent }), cp, now)));
  },
  /**
   * The deadline of `toolCallId` fired (see expireDeadline): the transition to commit, when
   * `expiry` is 'fired' (its decision, cancel request or escalation), with the same
   * compare-and-set as a client's decision.
   */
  expireDeadline(
    cp: Checkpoint,
    toolCallId: string,
    now: number,
  ): Transition & { readonly expiry: DeadlineExpiry } {
    const draft = new Draft(specContext({ name: cp.identity.agent }), cp, now);
    const expiry = expireDeadline(draft, toolCallId);
    if (expiry.kind === 'fired' && expiry.outcome.action === 'cancel') requestCancel(draft);
    return { ...done(draft), expiry };
  },
};
