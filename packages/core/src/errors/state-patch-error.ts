import { BatonError } from '@baton/protocol';

/** A state key registered wrongly, or a patch its key does not accept. */
export class StatePatchError extends BatonError<'validation_failed'> {
  constructor(message: string) {
    super('validation_failed', message);
  }
}
