import { BatonError } from '@baton/protocol';

/** A command-line mistake found after parsing (exit code 2). */
export class UsageError extends BatonError<'usage'> {
  constructor(message: string) {
    super('usage', message);
  }
}
