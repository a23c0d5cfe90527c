import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { asDecision, loadAuthzHook } from './authz-hook.ts';

describe('the authorization hook', () => {
  it('answers allow, deny or a narrowing of known fields; anything else is no answer', () => {
    expect(asDecision('allow')).toBe('allow');
    expect(asDecision('deny')).toBe('deny');
    expect(asDecision({ narrow: { owner: 'a', agent: 'b' } })).toEqual({
      narrow: { owner: 'a', agent: 'b' },
    });
    for (const bad of [
      undefined,
      null,
      true,
      'yes',
      {},
      { narrow: null },
      { narrow: { who: 'a' } },
    ])
      expect(asDecision(bad)).toBeNull();
    expect(asDecision({ narrow: { owner: 1 } })).toBeNull();
  });

  it('is loaded from a module path: default export, named export, or refused with a reason', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-authz-unit-'));
    writeFileSync(join(dir, 'a.mjs'), "export default () => 'allow';\n");
    writeFileSync(join(dir, 'b.mjs'), "export const rule = () => 'deny'; export const x = 1;\n");
    writeFileSync(join(dir, 'c.mjs'), 'export const x = 1;\n');
    const a = await loadAuthzHook('./a.mjs', dir);
    expect(a({} as never)).toBe('allow');
    const b = await loadAuthzHook('./b.mjs:rule', dir);
    expect(b({} as never)).toBe('deny');
    await expect(loadAuthzHook('./c.mjs', dir)).rejects.toThrow(/export one function/);
    await expect(loadAuthzHook('./missing.mjs', dir)).rejects.toThrow(/no such file/);
  });
});
