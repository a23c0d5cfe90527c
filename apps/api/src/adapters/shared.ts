import { createHash } from 'node:crypto';
import type {
  AwaitSnapshot,
  AwaitedToolCall,
  Decision,
  InputMessage,
  JsonValue,
  ToolOutcome,
} from '@baton/protocol';
import { JsonValueSchema } from '@baton/protocol';
import { BatonError } from '@baton/core';

/**
 * Shared pieces of the protocol adapters. Everything here is a pure mapping: no I/O, no clock,
 * no randomness, so the same input always yields the same commands and frames.
 */

/** What an adapter needs to know about the run that waits on a thread (a RunSnapshot fits). */
export interface PendingRun {
  readonly runId: string;
  readonly await: AwaitSnapshot | null;
}

/** Start a new run on a thread with the caller's new message(s). */
export interface StartRunCommand {
  readonly kind: 'start';
  readonly threadId: string;
  readonly agent: string;
  readonly input: InputMessage[];
}

/** Deliver decisions to the run that waits on the thread. */
export interface DecideCommand {
  readonly kind: 'decide';
  readonly threadId: string;
  /** The Baton run that waits (from PendingRun). */
  readonly runId: string;
  readonly decisions: Decision[];
}

const MAX_DECISION_ID = 200;

/**
 * A decision id that is stable for one suspension of one call (retries of the same answer are
 * no-ops in the engine) yet differs between two suspensions of the same call (so a call that
 * suspends again is not answered by the old decision). `since` is when the call was suspended.
 */
export function decisionIdFor(
  protocol: 'ai-sdk' | 'ag-ui',
  call: Pick<AwaitedToolCall, 'toolCallId' | 'since'>,
): string {
  const id = `${protocol}:${call.toolCallId}:${call.since}`;
  if (id.length <= MAX_DECISION_ID) return id;
  return `${protocol}:sha256:${createHash('sha256').update(id).digest('hex')}`;
}

export function badRequest(message: string, details?: unknown): BatonError {
  return new BatonError('bad_request', message, details);
}

/** Parses an unknown value as JSON data (decision payloads must be plain JSON). */
export function asJson(value: unknown): { ok: true; value: JsonValue } | { ok: false } {
  const parsed = JsonValueSchema.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false };
}

/** Text for an error a protocol shows as a string. */
export function outcomeErrorText(outcome: ToolOutcome): string {
  return outcome.error ?? (outcome.status === 'cancelled' ? 'cancelled' : 'tool failed');
}
