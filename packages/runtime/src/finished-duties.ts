import type { Checkpoint } from '@baton/protocol';
import type { Archiver } from './archive/archiver.ts';
import type { ChildRuns } from './child-runs.ts';

/** One thing a finished run owes beyond its own keys; idempotent, redone after a crash. */
type FinishedDuty = (cp: Checkpoint) => Promise<void>;

/**
 * What a finished run owes the rest of the system, in order, listed here once:
 * RunCommitter.finished runs them after the thread's release and the run's slot (and the
 * reconciler repeats RunCommitter.finished for a run whose worker died half-way).
 * - its run tree (child-runs.ts): its result to its parent, an end to its children;
 * - the archive (archiver.ts), when there is one: the run joins its pending list.
 */
export function finishedDuties(owners: {
  readonly children: ChildRuns;
  readonly archiver: Archiver | null;
}): (cp: Checkpoint) => Promise<void> {
  const { children, archiver } = owners;
  const duties: FinishedDuty[] = [(cp) => children.onFinished(cp)];
  if (archiver) duties.push((cp) => archiver.mark(cp));
  return async (cp) => {
    for (const duty of duties) await duty(cp);
  };
}
