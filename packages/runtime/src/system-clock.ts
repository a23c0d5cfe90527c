import type { Clock } from '@baton/core';

/**
 * Wall-clock implementation of the core Clock port. An aborted sleep rejects with the signal's
 * reason (as fetch does), not with a fresh AbortError: timers are cancelled on every model and
 * tool call once they settle, and building an error with a stack trace each time showed up in
 * the worker's CPU profile (node:timers/promises does that).
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (!signal) {
        setTimeout(resolve, ms);
        return;
      }
      // The reason is whatever the aborter chose (an Error everywhere in Baton).
      if (signal.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    }),
};
