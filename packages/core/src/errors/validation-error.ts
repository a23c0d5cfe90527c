import { BatonError } from '@baton/protocol';

export class ValidationError extends BatonError<'validation_failed'> {
  constructor(message: string, details?: unknown) {
    super('validation_failed', message, details);
  }
}
