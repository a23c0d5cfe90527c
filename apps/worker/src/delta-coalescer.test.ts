import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeltaCoalescer, type DeltaEvent } from './delta-coalescer.ts';

const text = (delta: string, step = 1): DeltaEvent => ({
  type: 'text.delta',
  step,
  messageId: `m${step}`,
  delta,
});
const reasoning = (delta: string): DeltaEvent => ({
  type: 'reasoning.delta',
  step: 1,
  messageId: 'm1',
  delta,
});

describe('DeltaCoalescer', () => {
  let writes: DeltaEvent[][];
  const sink = async (events: DeltaEvent[]): Promise<void> => {
    writes.push(events);
  };
  beforeEach(() => {
    writes = [];
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes the first delta at once and merges what follows within the window', async () => {
    const c = new DeltaCoalescer(sink, { windowMs: 40, maxChars: 1000 }, () => Date.now());
    await c.push(text('Hel'));
    expect(writes).toEqual([[text('Hel')]]);
    await c.push(text('lo'));
    await c.push(text(', '));
    expect(writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(40);
    expect(writes).toEqual([[text('Hel')], [text('lo, ')]]);
    await c.push(text('world'));
    await c.flush();
    expect(
      writes
        .flat()
        .map((e) => e.delta)
        .join(''),
    ).toBe('Hello, world');
  });

  it('keeps kinds, messages and order apart', async () => {
    const c = new DeltaCoalescer(sink, { windowMs: 40, maxChars: 1000 }, () => Date.now());
    await c.push(reasoning('think'));
    await c.push(reasoning('ing'));
    await c.push(text('a'));
    await c.push(text('b'));
    await c.push(text('c', 2));
    await c.flush();
    expect(writes).toEqual([[reasoning('think')], [reasoning('ing'), text('ab'), text('c', 2)]]);
  });

  it('writes as soon as maxChars are buffered, and every delta alone with windowMs 0', async () => {
    const full = new DeltaCoalescer(sink, { windowMs: 1000, maxChars: 4 }, () => Date.now());
    await full.push(text('a'));
    await full.push(text('bc'));
    await full.push(text('de'));
    expect(writes).toEqual([[text('a')], [text('bcde')]]);
    writes = [];
    const off = new DeltaCoalescer(sink, { windowMs: 0, maxChars: 1000 }, () => Date.now());
    for (const d of ['x', 'y', 'z']) await off.push(text(d));
    expect(writes).toEqual([[text('x')], [text('y')], [text('z')]]);
  });

  it('a failed timed write surfaces at the next push; discard drops the buffer', async () => {
    let fail = false;
    const c = new DeltaCoalescer(
      async (events) => {
        if (fail) throw new Error('fenced');
        writes.push(events);
      },
      { windowMs: 40, maxChars: 1000 },
      () => Date.now(),
    );
    await c.push(text('a'));
    await c.push(text('b'));
    fail = true;
    await vi.advanceTimersByTimeAsync(40);
    await expect(c.push(text('c'))).rejects.toThrow('fenced');
    const d = new DeltaCoalescer(sink, { windowMs: 40, maxChars: 1000 }, () => Date.now());
    writes = [];
    await d.push(text('a'));
    await d.push(text('b'));
    d.discard();
    await vi.advanceTimersByTimeAsync(100);
    await d.flush();
    expect(writes).toEqual([[text('a')]]);
  });
});
