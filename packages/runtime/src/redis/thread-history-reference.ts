/**
 * A run started on a thread references the thread's history instead of copying it into its own
 * `:messages` list: that list holds only what the run added (messages[historyLength …]), and the
 * `cp` field `hist` says where its first `count` messages are: the first `listLength` entries of
 * the thread's `:messages` list, less the ones removed (tombstones, see the thread store's
 * FORGET_RUN_LUA) in a generation ≤ `generation`. The thread's list only ever grows (a release
 * appends; a removal turns an entry into a tombstone in place, its JSON kept), so those entries
 * stay what the run was created from for as long as the thread lives: while the run is not
 * finished it holds the thread (its keys do not expire), and a thread is deleted only with its
 * runs. So a run's bytes on Redis, and the bytes a step writes, no longer grow with its thread.
 */
export interface HistoryReference {
  /** Entries of the thread's list the history is read from (tombstones included). */
  readonly listLength: number;
  /** The thread's removal generation when the run was created (`fgen`, 0 = none yet). */
  readonly generation: number;
  /** Messages of the history: the run's historyLength. */
  readonly count: number;
  /**
   * The list position the history starts at (the thread's history window: thread-store.ts
   * windowOf); 0 or absent: the list's start.
   */
  readonly start?: number;
}
