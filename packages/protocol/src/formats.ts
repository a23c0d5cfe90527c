/**
 * Format versions of everything one release of Baton writes and another reads, and the one
 * decision every reader makes about such a value: read it, leave it for a newer release
 * (defer), or refuse it. Upgrades then need no order: a release reads the formats of the
 * release before it and defers those of the release after it, and writes only what the release
 * before it reads (docs/deployment-and-scaling.md, "Upgrading").
 *
 * The rule for a change to any of these (a new field, a new meaning):
 * - An optional field that a reader which does not know it may ignore (the run goes on
 *   correctly without it) keeps the version: every reader strips or ignores unknown fields.
 * - Anything a reader that does not know it would misread (a field it must not ignore, a changed
 *   meaning, a removed field) takes the next version, in two releases: the first reads it
 *   (`newest` + 1) but still writes the old one; the one after writes it (`writes` + 1).
 *   `writes` never exceeds what the release before reads (formats.test.ts holds the release
 *   before to that).
 */

/** What one release reads and writes of one kind. */
export interface FormatRange {
  /** The version this release writes. */
  readonly writes: number;
  /** The oldest version it still reads (older ones are refused: nothing writes them anymore). */
  readonly oldest: number;
  /** The newest version it reads; newer ones are deferred to a release that reads them. */
  readonly newest: number;
}

/**
 * Each kind with where its version lives (absent = 1: written before the version existed).
 * - job: the `v` of step and tool job payloads (jobs.ts).
 * - checkpoint: the `v` of the checkpoint JSON in a run's `cp` hash, with the hash's fields
 *   (run-record/README.md lists them).
 * - event: the event body shapes of a run's log (events.ts); no field yet (1): readers fold
 *   unknown event types and fields away, so additions keep it.
 * - history: the `hist` field of a run created on a thread (history by reference); no field yet.
 * - admission: the fairness state (slots, backlogs, tenant windows); no field yet.
 * - script: what the Lua scripts of two releases read and write of each other's keys (their
 *   names carry a hash of their source, so each release runs its own).
 */
export const FORMATS = {
  job: { writes: 1, oldest: 1, newest: 1 },
  checkpoint: { writes: 1, oldest: 1, newest: 1 },
  event: { writes: 1, oldest: 1, newest: 1 },
  history: { writes: 1, oldest: 1, newest: 1 },
  admission: { writes: 1, oldest: 1, newest: 1 },
  script: { writes: 1, oldest: 1, newest: 1 },
} as const satisfies Record<string, FormatRange>;

export type FormatKind = keyof typeof FORMATS;

/** What a reader does with a value of a given format version. */
export type FormatVerdict =
  | { readonly action: 'read'; readonly version: number }
  /** Written by a newer release: leave it (a job goes back to its queue) for one that reads it. */
  | { readonly action: 'defer'; readonly version: number; readonly reason: string }
  /** Not a version at all, or one no live release writes: nothing will ever read it. */
  | { readonly action: 'refuse'; readonly reason: string };

/** Whether this release reads a value of `kind` stored with `version` (undefined: 1). */
export function readFormat(
  kind: FormatKind,
  version: unknown,
  formats: Readonly<Record<FormatKind, FormatRange>> = FORMATS,
): FormatVerdict {
  const range = formats[kind];
  const v = version === undefined || version === null ? 1 : version;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    return { action: 'refuse', reason: `${kind} format version ${JSON.stringify(v)} is not one` };
  if (v > range.newest)
    return {
      action: 'defer',
      version: v,
      reason: `${kind} format ${String(v)} is newer than this release reads (${String(range.newest)}): left for a newer release`,
    };
  if (v < range.oldest)
    return {
      action: 'refuse',
      reason: `${kind} format ${String(v)} is older than this release reads (${String(range.oldest)})`,
    };
  return { action: 'read', version: v };
}
