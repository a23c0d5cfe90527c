import type { JsonValue, Message } from '@baton/protocol';
import type { ThreadLimits, ThreadRun } from './thread-types.ts';

/** ZRANGE … WITHSCORES as runs, oldest first. */
export function runsOf(scored: readonly string[]): ThreadRun[] {
  const runs: ThreadRun[] = [];
  for (let i = 0; i + 1 < scored.length; i += 2)
    runs.push({ runId: scored[i] ?? '', createdAt: Number(scored[i + 1]) });
  return runs;
}

/** Bytes of the messages as JSON (what the thread's list holds of them). */
export function jsonBytes(messages: readonly unknown[]): number {
  let bytes = 0;
  for (const m of messages) bytes += Buffer.byteLength(JSON.stringify(m));
  return bytes;
}

/**
 * The history window a run of a thread is given (THREAD_HISTORY_MAX_MESSAGES,
 * THREAD_HISTORY_MAX_BYTES): the newest messages of the thread, as many as fit both budgets
 * (`entries`: the list's last entries, the first at position `first`; removed ones are skipped
 * and not counted), then moved forward past tool results at its start, so that a tool result
 * never reaches the model without the assistant message that called it. Whole messages only; an
 * empty window when even the newest message is over the byte budget. `start`: the window's
 * position in the list (its length when empty).
 */
export function windowOf(
  entries: readonly string[],
  first: number,
  limits: Pick<ThreadLimits, 'windowMessages' | 'windowBytes'>,
): { readonly messages: Message[]; readonly start: number } {
  let bytes = 0;
  let count = 0;
  let from = entries.length;
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const entry = entries[i] ?? '';
    if (!entry.startsWith('~')) {
      bytes += Buffer.byteLength(entry);
      count += 1;
      if (bytes > limits.windowBytes || count > limits.windowMessages) break;
    }
    from = i;
  }
  let messages = liveMessages(entries.slice(from));
  const cut = messages.findIndex((m) => m.role !== 'tool');
  if (cut !== 0) {
    const dropped = cut === -1 ? messages.length : cut;
    // past the dropped messages (and the removed entries among them) to the first one kept
    let seen = 0;
    while (from < entries.length && seen < dropped) {
      if (!(entries[from] ?? '').startsWith('~')) seen += 1;
      from += 1;
    }
    messages = messages.slice(dropped);
  }
  // removed entries before the first message kept are not part of the window either
  while (from < entries.length && (entries[from] ?? '').startsWith('~')) from += 1;
  return { messages, start: first + from };
}

/** The thread's history from its list: every message but the removed ones (tombstones). */
export function liveMessages(list: readonly string[]): Message[] {
  const out: Message[] = [];
  for (const m of list) if (!m.startsWith('~')) out.push(JSON.parse(m) as Message);
  return out;
}

export function parseState(raw: string | null): Record<string, JsonValue> {
  return raw === null ? {} : (JSON.parse(raw) as Record<string, JsonValue>);
}
