import { BatonError } from '@baton/protocol';

/**
 * A fenced write was refused: the writer's lease is no longer the run's current one (it expired
 * while the writer was paused, partitioned or slow, and maybe another worker holds the run now).
 * The writer must stop working on the run at once.
 */
export class LeaseLostError extends BatonError<'lease_lost'> {
  constructor(runId: string, why = 'a fenced write was refused') {
    super(
      'lease_lost',
      `run ${runId}: this worker's lease is no longer current (${why}); it must not write the run`,
    );
  }
}
