import type { Message } from '@baton/protocol';
import type { BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';
import type { HistoryReference } from '../redis/thread-history-reference.ts';

/**
 * The `hist` field: `<count>:<listLength>:<generation>[:<start>]` (the scripts read the count
 * only). `start` only when the history is a window that does not begin at the list's start: a
 * release of Baton before windows reads the first three fields and the list from its start, so
 * such a run needs workers of this release (docs/deployment-and-scaling.md, "Upgrading").
 */
export function encodeReference(ref: HistoryReference): string {
  const head = `${String(ref.count)}:${String(ref.listLength)}:${String(ref.generation)}`;
  return ref.start === undefined || ref.start === 0 ? head : `${head}:${String(ref.start)}`;
}

export function decodeReference(field: string | null | undefined): HistoryReference | null {
  if (field === null || field === undefined || field === '') return null;
  const [count, listLength, generation, start = 0] = field.split(':').map(Number);
  if (count === undefined || listLength === undefined || generation === undefined) return null;
  if (![count, listLength, generation, start].every(Number.isInteger)) return null;
  return start === 0 ? { count, listLength, generation } : { count, listLength, generation, start };
}

/** The history a reference stands for, from the thread list's first entries (JSON each). */
function referencedMessages(entries: readonly string[], ref: HistoryReference): Message[] {
  const out: Message[] = [];
  for (const entry of entries) {
    if (!entry.startsWith('~')) {
      out.push(JSON.parse(entry) as Message);
      continue;
    }
    // `~<generation>~<json>`: removed after the run was created: still part of its history.
    const end = entry.indexOf('~', 1);
    if (Number(entry.slice(1, end)) > ref.generation)
      out.push(JSON.parse(entry.slice(end + 1)) as Message);
  }
  return out;
}

/**
 * Reads the history a run references (one round trip to the thread's slot). A thread that is
 * gone (THREAD_TTL_SECONDS shorter than the finished run's retention) yields what is left.
 */
export async function readReferencedHistory(
  redis: RedisClient,
  keys: BatonKeys,
  tenantId: string,
  threadId: string,
  ref: HistoryReference,
): Promise<Message[]> {
  const start = ref.start ?? 0;
  if (ref.listLength <= start) return [];
  const entries = await redis.lrange(
    keys.thread(tenantId, threadId).messages,
    start,
    ref.listLength - 1,
  );
  return referencedMessages(entries, ref);
}
