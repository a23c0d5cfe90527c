import type { Checkpoint, RunEvent } from '@baton/protocol';

/** Drops what legitimately differs between drivers (ids, times, seq) so event logs compare. */
export function normalizeEvents(
  events: readonly RunEvent[],
  runId: string,
  threadId: string,
): unknown[] {
  return events.map((e) => {
    // Durations are wall-clock measurements: they differ between any two executions.
    const {
      seq: _seq,
      at: _at,
      runId: _r,
      threadId: _t,
      turnId: _turn,
      ...body
    } = e as RunEvent & { durationMs?: number };
    delete (body as { durationMs?: number }).durationMs;
    return JSON.parse(
      JSON.stringify(body).replaceAll(runId, 'RUN').replaceAll(threadId, 'THREAD'),
    ) as unknown;
  });
}

/** Events that concern one tool call, in order. */
export function callEvents(normalized: readonly unknown[], toolCallId: string): unknown[] {
  return normalized.filter(
    (e) =>
      (e as { toolCallId?: string }).toolCallId === toolCallId ||
      (e as { decision?: { toolCallId?: string } }).decision?.toolCallId === toolCallId,
  );
}

/** Run-level events (everything not tied to one tool call), in order. */
export function runLevelEvents(normalized: readonly unknown[]): unknown[] {
  return normalized.filter((e) => {
    const x = e as { toolCallId?: string; decision?: unknown; type: string };
    return x.toolCallId === undefined && x.decision === undefined && x.type !== 'state.delta';
  });
}

export function normalizeMessages(cp: Checkpoint): unknown {
  return JSON.parse(JSON.stringify(cp.messages).replaceAll(cp.identity.runId, 'RUN'));
}
