import type { Message } from '@baton/protocol';
import type { KnownMessages } from '@baton/runtime/internal';

/** What a worker kept of a run's message list. */
export interface Kept extends KnownMessages {
  readonly messages: readonly Message[];
  /** The cache's generation when this was kept (see invalidate). */
  readonly generation: number;
}

interface Entry {
  readonly name: string;
  /** The run's whole list: its referenced thread history, then its own list. */
  readonly messages: readonly Message[];
  /** How many of `messages` are the referenced history (not in the run's own list). */
  readonly history: number;
}

/**
 * The messages of the runs this worker passed over lately, by the name of the list they came
 * from ('mepoch': a list keeps its name while it only grows). A pass over a run this worker saw
 * before reads only the messages added since (RunLeases.acquireAndLoad), instead of the whole
 * conversation on every lease: at 1,000 earlier messages that was ~250 KB read and parsed per
 * pass. Bounded (least recently used out); a miss or a renamed list reads everything, as before.
 * A list only grows under its name while Redis keeps what it acknowledged: a Redis that restarts
 * from a truncated AOF (or a replica promoted late) can hold a shorter list under the same name,
 * which then grows again differently. So everything is forgotten whenever the connection drops
 * (invalidate), and a prefix kept before that is never completed by a tail read after it.
 */
export class MessageCache {
  private readonly entries = new Map<string, Entry>();
  private readonly max: number;
  private generation = 0;

  constructor(max = 2_000) {
    this.max = max;
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
    const prefix = from === 0 || !kept ? history : kept.messages;
    const before = from === 0 || !kept ? history.length : kept.messages.length - kept.count;
    const messages = [...prefix, ...tail.map((m) => JSON.parse(m) as Message)];
    this.entries.delete(runId);
    if (name !== null) {
      this.entries.set(runId, { name, messages, history: before });
      if (this.entries.size > this.max) {
        const oldest = this.entries.keys().next();
        if (!oldest.done) this.entries.delete(oldest.value);
      }
    }
    return messages;
  }

  forget(runId: string): void {
    this.entries.delete(runId);
  }
}
