import { BatonError } from '@baton/protocol';

/** A typed answer that does not fit its payload form field; the message says what would. */
export class FieldInputError extends BatonError<'field_invalid'> {
  static override readonly errorName: string = 'FieldInputError';
  constructor(message: string) {
    super('field_invalid', message);
    this.name = 'FieldInputError';
  }
}
