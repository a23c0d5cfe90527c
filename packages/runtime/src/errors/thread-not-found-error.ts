import { BatonError } from '@baton/protocol';

export class ThreadNotFoundError extends BatonError<'not_found'> {
  constructor(threadId: string) {
    super('not_found', `thread ${threadId} was not found`);
  }
}
