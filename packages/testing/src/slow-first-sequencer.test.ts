import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SLOW_FILES, slowFirst } from './slow-first-sequencer.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('slowFirst', () => {
  it('puts the known-slow files first, longest first, and keeps the order of the rest', () => {
    const files = [
      '/repo/test/integration/a.test.ts',
      '/repo/test/integration/cli.test.ts',
      '/repo/test/integration/b.test.ts',
      '/repo/test/integration/start-state.test.ts',
      '/repo/test/integration/sdk-pack.test.ts',
    ];
    expect(slowFirst(files, (f) => f)).toEqual([
      '/repo/test/integration/start-state.test.ts',
      '/repo/test/integration/sdk-pack.test.ts',
      '/repo/test/integration/cli.test.ts',
      '/repo/test/integration/a.test.ts',
      '/repo/test/integration/b.test.ts',
    ]);
  });

  it('matches whole path segments only', () => {
    const files = ['/repo/test/integration/my-cli.test.ts', '/repo/test/integration/cli.test.ts'];
    expect(slowFirst(files, (f) => f)).toEqual([
      '/repo/test/integration/cli.test.ts',
      '/repo/test/integration/my-cli.test.ts',
    ]);
  });

  it('lists files that exist (a renamed file would silently lose its place)', () => {
    const missing = SLOW_FILES.map(([file]) => file).filter((file) => !existsSync(ROOT + file));
    expect(missing).toEqual([]);
  });
});
