import type { Activity } from '@baton/core';
import type { Checkpoint, QueuedInfo } from '@baton/protocol';
import type { BatonQueues } from './queues.ts';
import type { RunAdmission } from './fairness/run-admission.ts';

/**
 * The one "admit or enqueue" rule of the control plane: a run with work to do asks admission
 * for a slot of its tenant and fairness key (docs/fairness.md), or, without admission, gets its
 * next step job at once. Every path that starts or resumes a run (create, a resent create, a
 * decision, a promoted waiting run) goes through here.
 */
export class RunStarts {
  private readonly queues: BatonQueues;
  private readonly admission: RunAdmission | undefined;

  constructor(queues: BatonQueues, admission: RunAdmission | undefined) {
    this.queues = queues;
    this.admission = admission;
  }

  /** The run's next job, or its place in its key's backlog when it has no slot (admission). */
  async start(
    identity: Checkpoint['identity'],
    reason: 'start' | 'decision',
    version: number,
  ): Promise<QueuedInfo | null> {
    if (this.admission) return this.admission.request(identity, reason, version);
    await this.queues.enqueueStep(identity, reason, version);
    return null;
  }

  /**
   * What a decision owes its run, as it stands (`owed`): a resumed run asks for a slot again (it
   * gave its own back when it began to wait); one still waiting or ending gets a pass, unless
   * nothing was committed and it is done already (a resend).
   */
  async afterDecision(
    identity: Checkpoint['identity'],
    owed: { readonly activity: Activity; readonly version: number } | null,
    committed: boolean,
  ): Promise<void> {
    if (owed?.activity === 'active') await this.start(identity, 'decision', owed.version);
    else if (owed && (committed || owed.activity !== 'done'))
      await this.queues.enqueueStep(identity, 'decision', owed.version);
  }

  /** Why the run waits for a slot and where it stands; null when it does not (docs/fairness.md). */
  async queuedInfo(identity: Checkpoint['identity']): Promise<QueuedInfo | null> {
    return (await this.admission?.queued(identity)) ?? null;
  }
}
