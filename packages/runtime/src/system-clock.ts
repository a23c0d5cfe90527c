import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '@baton/core';

/** Wall-clock implementation of the core Clock port. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, signal ? { signal } : undefined),
};
