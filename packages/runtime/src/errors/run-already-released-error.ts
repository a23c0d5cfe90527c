import { BatonError } from '@baton/protocol';

export class RunAlreadyReleasedError extends BatonError<'run_released'> {
  constructor(threadId: string, runId: string) {
    super('run_released', `thread ${threadId}: run ${runId} was already released`);
  }
}
