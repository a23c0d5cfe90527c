import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { systemClock } from './system-clock.ts';

describe('systemClock.sleep', () => {
  it('resolves after the time and leaves no listener on the signal', async () => {
    const controller = new AbortController();
    await expect(systemClock.sleep(5, controller.signal)).resolves.toBeUndefined();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('rejects with the signal reason when aborted while sleeping', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const slept = systemClock.sleep(60_000, controller.signal);
    controller.abort(reason);
    await expect(slept).rejects.toBe(reason);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort('gone');
    await expect(systemClock.sleep(60_000, controller.signal)).rejects.toBe('gone');
  });

  it('sleeps without a signal', async () => {
    await expect(systemClock.sleep(1)).resolves.toBeUndefined();
  });
});
