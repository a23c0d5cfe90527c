import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { keyPart } from './keys.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** The layout comment at the top of keys.ts, with `p` for the prefix. */
function documentedLayout(): string {
  const source = readFileSync(new URL('./keys.ts', import.meta.url), 'utf8');
  return source.slice(0, source.indexOf('*/'));
}

/** Every `${…prefix}:name` key a source file builds: `p:name`, or `p:{tag:` for a hash tag. */
function keysBuiltInSource(): Map<string, string> {
  const found = new Map<string, string>();
  const files = globSync(['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'], {
    cwd: ROOT,
    exclude: (path) => path.includes('node_modules'),
  }).filter((f) => !/\.test(-d)?\.ts$/.test(f));
  for (const file of files) {
    const text = readFileSync(`${ROOT}/${file}`, 'utf8');
    for (const m of text.matchAll(/prefix\}:(\{[a-z]+:|[a-z][a-z0-9-]*(?::[a-z][a-z0-9-]*)*)/g))
      found.set(`p:${m[1]!}`, file);
  }
  return found;
}

describe('the Redis key layout (keys.ts)', () => {
  it('documents every key the sources build under the prefix', () => {
    const layout = documentedLayout();
    const built = keysBuiltInSource();
    expect(built.size).toBeGreaterThan(20);
    const missing = [...built].filter(([key]) => !layout.includes(key));
    expect(missing, 'keys built in these files are missing from the layout comment').toEqual([]);
  });

  it('builds every key under the prefix in keys.ts (fairness keys included), nowhere else', () => {
    const elsewhere = [...new Set(keysBuiltInSource().values())].filter(
      (file) => file !== 'packages/runtime/src/redis/keys.ts',
    );
    expect(elsewhere, 'these files build Redis keys themselves: add a BatonKeys member').toEqual(
      [],
    );
  });
});

describe('keyPart', () => {
  it('escapes what would end a key part or a hash tag, and returns a plain id as it is', () => {
    expect(keyPart('run_01HZX-abc.def')).toBe('run_01HZX-abc.def');
    expect(keyPart('a:b{c}%d')).toBe('a%3Ab%7Bc%7D%25d');
    expect(keyPart('%%')).toBe('%25%25');
    expect(keyPart('')).toBe('');
  });
});
