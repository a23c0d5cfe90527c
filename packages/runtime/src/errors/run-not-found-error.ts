import { BatonError } from '@baton/protocol';

export class RunNotFoundError extends BatonError<'run_not_found'> {
  constructor(runId: string) {
    super('run_not_found', `run ${runId} was not found`);
  }
}
