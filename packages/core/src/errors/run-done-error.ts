import { BatonError } from '@baton/protocol';

export class RunDoneError extends BatonError<'run_done'> {
  constructor(runId: string) {
    super('run_done', `run ${runId} has already finished; it accepts no more decisions`);
  }
}
