/** One version of an agent as the choice of its current version sees it. */
export interface VersionCandidate {
  readonly version: string;
  /** When a worker first advertised it (ms). */
  readonly firstSeen: number;
  /** A live worker serves it now. */
  readonly live: boolean;
}

/** What an operator set (`<p>:agent-versions:current`): the promoted version and those before. */
export interface PromotedVersion {
  readonly version: string;
  /** Versions promoted before it, most recent last (what rollbacks go back to). */
  readonly history: readonly string[];
}

/** Newest first: the latest first advertised, ties by name (stable across processes). */
export function newestFirst<T extends Pick<VersionCandidate, 'version' | 'firstSeen'>>(
  versions: readonly T[],
): T[] {
  return [...versions].sort((a, b) =>
    b.firstSeen !== a.firstSeen ? b.firstSeen - a.firstSeen : a.version < b.version ? 1 : -1,
  );
}

/**
 * The version new runs of an agent get: the promoted one while it is known; else the newest a
 * live worker serves; else the newest advertised (its runs wait, `version_unavailable`, until a
 * worker of it starts). null: no version advertised (workers of releases before versions).
 */
export function currentVersion(
  versions: readonly VersionCandidate[],
  promoted: PromotedVersion | null,
): string | null {
  if (promoted && versions.some((v) => v.version === promoted.version)) return promoted.version;
  const sorted = newestFirst(versions);
  return (sorted.find((v) => v.live) ?? sorted[0])?.version ?? null;
}

export type RollbackPlan =
  | { readonly kind: 'rollback'; readonly to: PromotedVersion }
  | { readonly kind: 'nothing_to_roll_back'; readonly current: string | null };

/**
 * Where `baton agents rollback` goes: the version promoted before the current one (its history);
 * without a history, the newest known version older than the current one. Versions no longer
 * advertised are skipped.
 */
export function rollbackPlan(
  versions: readonly VersionCandidate[],
  promoted: PromotedVersion | null,
): RollbackPlan {
  const current = currentVersion(versions, promoted);
  const known = new Set(versions.map((v) => v.version));
  const history = [...(promoted?.history ?? [])];
  while (history.length > 0) {
    const to = history.pop() as string;
    if (to !== current && known.has(to)) return { kind: 'rollback', to: { version: to, history } };
  }
  const sorted = newestFirst(versions);
  const at = sorted.findIndex((v) => v.version === current);
  const older = at < 0 ? undefined : sorted[at + 1];
  return older
    ? { kind: 'rollback', to: { version: older.version, history: [] } }
    : { kind: 'nothing_to_roll_back', current };
}

/** After promoting `version`: the record, with the version it replaces in the history (max 20). */
export function promoted(
  version: string,
  before: PromotedVersion | null,
  current: string | null,
): PromotedVersion {
  const history = [...(before?.history ?? [])];
  if (current !== null && current !== version) history.push(current);
  return { version, history: history.slice(-20) };
}
