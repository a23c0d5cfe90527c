import { describe, expect, it } from 'vitest';
import { ProcessGate } from './process-gate.ts';

describe('ProcessGate', () => {
  it('never lets more than its limit run at once, and runs everything', async () => {
    const gate = new ProcessGate(3);
    let now = 0;
    let peak = 0;
    const releases: (() => void)[] = [];
    const done = Array.from({ length: 10 }, (_, i) =>
      gate.run(async () => {
        now += 1;
        peak = Math.max(peak, now);
        await new Promise<void>((resolve) => releases.push(resolve));
        now -= 1;
        return i;
      }),
    );
    while (releases.length < 10) {
      await new Promise((r) => setImmediate(r));
      expect(gate.inFlight).toBeLessThanOrEqual(3);
      releases.splice(0).forEach((r) => r());
      if (releases.length === 0 && now === 0) break;
    }
    expect(await Promise.all(done)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBe(3);
    expect(gate.inFlight).toBe(0);
  });
});
