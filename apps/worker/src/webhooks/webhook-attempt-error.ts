import { BatonError } from '@baton/protocol';

/** A failed attempt another will follow; BullMQ's backoff strategy reads the delay from it. */
export class WebhookAttemptError extends BatonError<'webhook_attempt'> {
  readonly delayMs: number;
  constructor(message: string, delayMs: number) {
    super('webhook_attempt', message);
    this.delayMs = delayMs;
  }
}
