import type { ArchivedRunSummary, RunListFilters } from '@baton/core';
import { InvalidCursorError } from '../errors/invalid-cursor-error.ts';

/** A run as lists show it: the same shape hot (here) and archived (the archive port's). */
export type RunSummary = ArchivedRunSummary;

export interface ListRunsQuery extends RunListFilters {
  /** Opaque cursor from a previous page's nextCursor. */
  readonly cursor?: string | null;
  readonly limit: number;
}

export interface RunPage {
  /** Newest first (createdAt desc, then runId desc). */
  readonly runs: RunSummary[];
  /** Null when there is nothing after this page. */
  readonly nextCursor: string | null;
}

export function encodeCursor(createdAt: number, runId: string): string {
  return Buffer.from(JSON.stringify([createdAt, runId]), 'utf8').toString('base64url');
}

/**
 * The cursor as encodeCursor wrote it, or InvalidCursorError: a creation time in ms (a whole
 * number a bigint column holds) and a run id PostgreSQL can compare (no NUL). Checked here, the
 * one decoder of both list paths, before either store is asked: the archive's would refuse
 * [1.5, "x"] or 2^63 (a 500 once), where Redis's answered some page.
 */
export function decodeCursor(cursor: string): { createdAt: number; runId: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      (value[0] as number) >= 0 &&
      typeof value[1] === 'string' &&
      value[1].length <= 512 &&
      !value[1].includes('\0')
    )
      return { createdAt: value[0] as number, runId: value[1] };
  } catch {
    // fall through
  }
  throw new InvalidCursorError();
}
