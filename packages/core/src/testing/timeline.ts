import type { Checkpoint, ToolCallStatus } from '@baton/protocol';
import { deriveRunStatus } from '../run-status.ts';
import type { CommitRecord } from '../runner/memory-store.ts';

export interface TimelineRow {
  readonly calls: readonly ToolCallStatus[];
  /** The seed's "Run Status" column: derive_run_status over the round's calls. */
  readonly derived: 'running' | 'waiting' | 'done';
  /** The run's own status in the same checkpoint. */
  readonly run: Checkpoint['status'];
}

/** Per-commit statuses of the named calls (in order), consecutive duplicates removed. */
export function callTimeline(
  commits: readonly CommitRecord[],
  callIds: readonly string[],
): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const { checkpoint } of commits) {
    const calls = callIds.map((id) => checkpoint.calls[id]?.status);
    if (calls.some((s) => s === undefined)) continue;
    const statuses = calls as ToolCallStatus[];
    const row = { calls: statuses, derived: deriveRunStatus(statuses), run: checkpoint.status };
    const last = rows.at(-1);
    if (last && JSON.stringify(last) === JSON.stringify(row)) continue;
    rows.push(row);
  }
  return rows;
}
