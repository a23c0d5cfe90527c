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

  it('hands a freed slot to the waiter of the highest priority, then in arrival order', async () => {
    const gate = new ProcessGate(1);
    let release = (): void => undefined;
    const first = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    const order: string[] = [];
    const waiters = [
      gate.run(async () => void order.push('p3-a'), 3),
      gate.run(async () => void order.push('p5'), 5),
      gate.run(async () => void order.push('p1'), 1),
      gate.run(async () => void order.push('p3-b'), 3),
    ];
    release();
    await Promise.all([first, ...waiters]);
    expect(order).toEqual(['p1', 'p3-a', 'p3-b', 'p5']);
  });
});
