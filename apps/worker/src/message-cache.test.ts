import { describe, expect, it } from 'vitest';
import type { Message } from '@baton/protocol';
import { MessageCache } from './message-cache.ts';

const m = (id: string): Message => ({ id, role: 'user', content: id });
const json = (...ids: string[]): string[] => ids.map((id) => JSON.stringify(m(id)));

describe('MessageCache', () => {
  it('keeps a run list by name and puts a read tail after what it kept', () => {
    const cache = new MessageCache();
    expect(cache.known('r')).toBeUndefined();
    const all = cache.resolve('r', undefined, 'n1', 0, json('a', 'b'));
    expect(all.map((x) => x.id)).toEqual(['a', 'b']);
    const kept = cache.known('r');
    expect(kept).toMatchObject({ name: 'n1', count: 2 });
    const more = cache.resolve('r', kept, 'n1', 2, json('c'));
    expect(more.map((x) => x.id)).toEqual(['a', 'b', 'c']);
    // The same objects: a commit over them appends only what is new (identity prefix).
    expect(more[0]).toBe(all[0]);
  });

  it("puts a run's referenced thread history first, and counts only the run's own list", () => {
    const cache = new MessageCache();
    const history = [m('h1'), m('h2'), m('h3')];
    const all = cache.resolve('r', undefined, 'n1', 0, json('a'), history);
    expect(all.map((x) => x.id)).toEqual(['h1', 'h2', 'h3', 'a']);
    const kept = cache.known('r');
    expect(kept).toMatchObject({ name: 'n1', count: 1 });
    const more = cache.resolve('r', kept, 'n1', 1, json('b'));
    expect(more.map((x) => x.id)).toEqual(['h1', 'h2', 'h3', 'a', 'b']);
    expect(cache.known('r')).toMatchObject({ count: 2 });
  });

  it('a list read whole replaces what was kept; an unnamed list is not kept', () => {
    const cache = new MessageCache();
    cache.resolve('r', undefined, 'n1', 0, json('a'));
    cache.resolve('r', cache.known('r'), 'n2', 0, json('x', 'y'));
    expect(cache.known('r')).toMatchObject({ name: 'n2', count: 2 });
    cache.resolve('old', undefined, null, 0, json('a'));
    expect(cache.known('old')).toBeUndefined();
  });

  it('refuses a tail it has no prefix for, rather than build a wrong list', () => {
    const cache = new MessageCache();
    expect(() => cache.resolve('r', undefined, 'n1', 3, json('d'))).toThrow(/without a prefix/);
    cache.resolve('r', undefined, 'n1', 0, json('a'));
    expect(() => cache.resolve('r', cache.known('r'), 'n2', 1, json('b'))).toThrow();
  });

  it('holds at most `max` runs, the least recently used going first', () => {
    const cache = new MessageCache(2);
    cache.resolve('a', undefined, 'n', 0, json('1'));
    cache.resolve('b', undefined, 'n', 0, json('1'));
    cache.resolve('a', cache.known('a'), 'n', 1, json('2'));
    cache.resolve('c', undefined, 'n', 0, json('1'));
    expect(cache.known('b')).toBeUndefined();
    expect(cache.known('a')).toBeDefined();
    expect(cache.known('c')).toBeDefined();
  });

  it('forgets everything on invalidate, and a prefix kept before it is never completed', () => {
    const cache = new MessageCache();
    cache.resolve('r', undefined, 'n1', 0, json('a', 'b'));
    const kept = cache.known('r')!;
    expect(cache.outdated(kept)).toBe(false);
    cache.invalidate();
    expect(cache.known('r')).toBeUndefined();
    expect(cache.outdated(kept)).toBe(true);
    expect(() => cache.resolve('r', kept, 'n1', 2, json('c'))).toThrow(/without a prefix/);
    // read whole, it is kept again
    expect(cache.resolve('r', kept, 'n1', 0, json('a', 'x')).map((x) => x.id)).toEqual(['a', 'x']);
    expect(cache.outdated(cache.known('r')!)).toBe(false);
  });
});

describe('MessageCache byte bound', () => {
  const big = (id: string, size: number): string =>
    JSON.stringify({ id, role: 'user', content: 'x'.repeat(size) });

  it('keeps at most maxBytes of JSON, the least recently used going first', () => {
    const cache = new MessageCache(100, 10_000);
    cache.resolve('a', undefined, 'n', 0, [big('a1', 4_000)]);
    cache.resolve('b', undefined, 'n', 0, [big('b1', 4_000)]);
    expect(cache.size.runs).toBe(2);
    // a grows past the bound with b: b, least recently used, goes
    cache.resolve('a', cache.known('a'), 'n', 1, [big('a2', 4_000)]);
    expect(cache.known('b')).toBeUndefined();
    expect(cache.known('a')).toMatchObject({ count: 2 });
    expect(cache.size.bytes).toBeLessThanOrEqual(10_000);
    expect(cache.size.bytes).toBe(cache.known('a')!.bytes);
    // a list over the bound alone is not kept, and pushes nothing else out
    cache.resolve('c', undefined, 'n', 0, [big('c1', 6_000)]);
    cache.resolve('huge', undefined, 'n', 0, [big('h1', 20_000)]);
    expect(cache.known('huge')).toBeUndefined();
    expect(cache.known('c')).toBeDefined();
    expect(cache.size.bytes).toBeLessThanOrEqual(10_000);
  });

  it('counts a referenced history, forgets bytes with runs, and starts over on invalidate', () => {
    const cache = new MessageCache(100, 1_000_000);
    const history = [m('h1'), m('h2')];
    const tail = json('a');
    cache.resolve('r', undefined, 'n', 0, tail, history);
    const expected =
      history.reduce((n, x) => n + Buffer.byteLength(JSON.stringify(x)), 0) +
      Buffer.byteLength(tail[0]!);
    expect(cache.size).toEqual({ runs: 1, bytes: expected });
    cache.forget('r');
    expect(cache.size).toEqual({ runs: 0, bytes: 0 });
    cache.resolve('r', undefined, 'n', 0, tail);
    cache.invalidate();
    expect(cache.size).toEqual({ runs: 0, bytes: 0 });
  });
});
