import { BatonError } from '@baton/protocol';

export class CorruptCheckpointError extends BatonError<'corrupt_checkpoint'> {
  constructor(runId: string, why: string) {
    super('corrupt_checkpoint', `run ${runId}: stored checkpoint is invalid (${why})`);
  }
}
