import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

describe('RunIndex', () => {
  it('is built once, by the store; everyone else writes the indexes through store.index', () => {
    const builders = globSync(['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'], {
      cwd: ROOT,
      exclude: (path) => path.includes('node_modules'),
    })
      .filter((f) => !/\.test(-d)?\.ts$/.test(f))
      .filter((f) => readFileSync(`${ROOT}/${f}`, 'utf8').includes('new RunIndex('));
    expect(builders).toEqual(['packages/runtime/src/run-record/redis-run-store.ts']);
  });
});
