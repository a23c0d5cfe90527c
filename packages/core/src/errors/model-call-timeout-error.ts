import { BatonError } from '@baton/protocol';

/** A model call that took longer than the policy's callTimeoutMs. */
export class ModelCallTimeoutError extends BatonError<'model_call_timeout'> {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super('model_call_timeout', `model call timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}
