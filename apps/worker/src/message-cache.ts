import type { Message } from '@baton/protocol';
import type { KnownMessages } from '@baton/runtime/internal';

/** What a worker kept of a run's message list. */
export interface Kept extends KnownMessages {
  readonly messages: readonly Message[];
  /** The cache's generation when this was kept (see invalidate). */
  readonly generation: number;
  /** Bytes of `messages` as JSON. */
  readonly bytes: number;
}

interface Entry {
  readonly name: string;
  /** The run's whole list: its referenced thread history, then its own list. */
  readonly messages: readonly Message[];
  /** How many of `messages` are the referenced history (not in the run's own list). */
  readonly history: number;
  /** Bytes of `messages` as JSON (what the cache counts against its byte bound). */
  readonly bytes: number;
}

/** MESSAGE_CACHE_MAX_BYTES' default: what the kept lists of one worker process may add up to. */
const MESSAGE_CACHE_DEFAULT_BYTES = 64 * 1024 * 1024;

/**
 * The messages of the runs this worker passed over lately, by the name of the list they came
 * from ('mepoch': a list keeps its name while it only grows). A pass over a run this worker saw
 * before reads only the messages added since (RunLeases.acquireAndLoad), instead of the whole
 * conversation on every lease: at 1,000 earlier messages that was ~250 KB read and parsed per
 * pass. Bounded in runs (`max`) and in bytes of JSON (`maxBytes`: a few runs on long threads
 * must not hold a worker's heap), least recently used out, and a list over `maxBytes` alone is
 * not kept; a miss or a renamed list reads everything, as before.
 * A list only grows under its name while Redis keeps what it acknowledged: a Redis that restarts
 * from a truncated AOF (or a replica promoted late) can hold a shorter list under the same name,
 * which then grows again differently. So everything is forgotten whenever the connection drops
 * (invalidate), and a prefix kept before that is never completed by a tail read after it.
 */
export class MessageCache {
  private readonly entries = new Map<string, Entry>();
  private readonly max: number;
  private readonly maxBytes: number;
  private bytes = 0;
  private generation = 0;

  constructor(max = 2_000, maxBytes = MESSAGE_CACHE_DEFAULT_BYTES) {
    this.max = max;
    this.maxBytes = maxBytes;
  }

  /** How many runs' lists are kept now, and their bytes (JSON). */
  get size(): { readonly runs: number; readonly bytes: number } {
    return { runs: this.entries.size, bytes: this.bytes };
  }

  /**
   * What is kept of the run's list (its name and messages), to tell the acquire; the caller
   * hands it back to `resolve`, so an eviction meanwhile changes nothing.
   */
  known(runId: string): Kept | undefined {
    const entry = this.entries.get(runId);
    return entry
      ? {
          name: entry.name,
          count: entry.messages.length - entry.history,
          messages: entry.messages,
          generation: this.generation,
          bytes: entry.bytes,
        }
      : undefined;
  }

  /**
   * Forgets every list: the store may have lost a suffix of any of them (the connection to Redis
   * dropped; it may come back as a restart from an older past). Kept prefixes handed out before
   * are outdated from now on.
   */
  invalidate(): void {
    this.generation += 1;
    this.entries.clear();
    this.bytes = 0;
  }

  /** Whether `kept` was handed out before the last invalidate(). */
  outdated(kept: Kept): boolean {
    return kept.generation !== this.generation;
  }

  /**
   * The run's whole message list from what the acquire returned: `tail` (JSON) starting at index
   * `from` (0: the whole list, after `history`, the thread history the run references) of the
   * run's own list named `name` (null: not named, nothing is kept), on top of `kept` (what
   * `known` gave before the acquire, history included).
   */
  resolve(
    runId: string,
    kept: Kept | undefined,
    name: string | null,
    from: number,
    tail: readonly string[],
    history: readonly Message[] = [],
  ): Message[] {
    // The acquire answers from > 0 only for the name and count it was given.
    if (
      from !== 0 &&
      (kept === undefined || kept.name !== name || kept.count !== from || this.outdated(kept))
    )
      throw new Error(
        `message cache: run ${runId} list read from ${String(from)} without a prefix`,
      );
    const fresh = from === 0 || !kept;
    const prefix = fresh ? history : kept.messages;
    const before = fresh ? history.length : kept.messages.length - kept.count;
    const messages = [...prefix, ...tail.map((m) => JSON.parse(m) as Message)];
    this.forget(runId);
    if (name !== null) {
      let bytes = fresh ? jsonBytes(history) : kept.bytes;
      for (const m of tail) bytes += Buffer.byteLength(m);
      // A list over the bound alone is not kept (nor does it push out every other).
      if (bytes > this.maxBytes) return messages;
      this.entries.set(runId, { name, messages, history: before, bytes });
      this.bytes += bytes;
      for (const [oldest] of this.entries) {
        if (this.entries.size <= this.max && this.bytes <= this.maxBytes) break;
        this.forget(oldest);
      }
    }
    return messages;
  }

  forget(runId: string): void {
    const entry = this.entries.get(runId);
    if (entry === undefined) return;
    this.entries.delete(runId);
    this.bytes -= entry.bytes;
  }
}

function jsonBytes(messages: readonly Message[]): number {
  let bytes = 0;
  for (const m of messages) bytes += Buffer.byteLength(JSON.stringify(m));
  return bytes;
}
