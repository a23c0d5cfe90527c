import { BatonError } from '@baton/protocol';

/** A run-list cursor no previous page handed out; the API answers 400 bad_request. */
export class InvalidCursorError extends BatonError<'invalid_cursor'> {
  constructor() {
    super('invalid_cursor', 'invalid cursor');
  }
}
