import { BatonError } from '@baton/protocol';

/** A schedule-list cursor no previous page handed out; the API answers 400 bad_request. */
export class InvalidScheduleCursorError extends BatonError<'invalid_cursor'> {
  constructor(message = 'cursor is invalid') {
    super('invalid_cursor', message);
  }
}
