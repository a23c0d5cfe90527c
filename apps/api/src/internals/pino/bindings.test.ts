import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { isBoundTo } from './bindings.ts';

const quiet = (): Writable =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

/** Contract of pino's logger internals (bindings.ts): fails when an upgrade moves them. */
describe('isBoundTo (pino internals)', () => {
  it('tells a logger bound to a tenant (directly or through a parent) from one that is not', () => {
    const root = pino(quiet());
    const bound = root.child({ tenant: 'acme' });
    expect(isBoundTo(root, { tenant: 'acme' })).toBe(false);
    expect(isBoundTo(bound, { tenant: 'acme' })).toBe(true);
    expect(isBoundTo(bound.child({ req: 1 }), { tenant: 'acme' })).toBe(true);
    expect(isBoundTo(bound, { tenant: 'other' })).toBe(false);
    expect(isBoundTo(root, {})).toBe(true);
  });

  it('finds the symbols it reads on a real logger: chindings text and a stringify function', () => {
    const log = pino(quiet()).child({ tenant: 't1' });
    const fields = log as unknown as Record<symbol, unknown>;
    expect(typeof pino.symbols.chindingsSym).toBe('symbol');
    expect(typeof pino.symbols.stringifySym).toBe('symbol');
    expect(fields[pino.symbols.chindingsSym]).toContain('"tenant":"t1"');
    const stringify = fields[pino.symbols.stringifySym] as (v: unknown) => string;
    expect(stringify({ tenant: 't1' })).toBe('{"tenant":"t1"}');
  });
});
