import { BatonError } from '@baton/protocol';

/**
 * A new run refused because its thread's history, with the run's input, would pass
 * THREAD_MAX_MESSAGES or THREAD_MAX_BYTES (413 thread_too_large; nothing was written).
 */
export class ThreadTooLargeError extends BatonError<'thread_too_large'> {
  constructor(
    threadId: string,
    held: { readonly messages: number; readonly bytes: number },
    limits: { readonly maxMessages: number; readonly maxBytes: number },
    input: { readonly messages: number; readonly bytes: number },
  ) {
    super(
      'thread_too_large',
      `thread ${threadId} holds ${String(held.messages)} messages (${String(held.bytes)} bytes); with this run's ${String(input.messages)} input messages (${String(input.bytes)} bytes) it would pass its limit of ${String(limits.maxMessages)} messages / ${String(limits.maxBytes)} bytes: start a new thread (carry over a summary as its first message), or delete runs of this one`,
      {
        threadId,
        messages: held.messages,
        bytes: held.bytes,
        maxMessages: limits.maxMessages,
        maxBytes: limits.maxBytes,
      },
    );
  }
}
