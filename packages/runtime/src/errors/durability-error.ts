import { BatonError } from '@baton/protocol';

/** Redis cannot promise the durability strict mode asks for: 503, retry shortly. */
export class DurabilityError extends BatonError<'unavailable'> {
  constructor(message: string) {
    super('unavailable', message);
  }
}
