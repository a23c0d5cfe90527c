/**
 * Baton's errors are recognised by marker (`XxxError.isInstance(e)`, `isBatonError(e, code)`),
 * never by `instanceof`: a second copy of a package (a bundled client beside the installed one, a
 * duplicated node_modules) has other classes, and `instanceof` then says no. This keeps production
 * code from sliding back: every class that extends BatonError, directly or not, is collected from
 * the sources, and no production file may use `instanceof` on one.
 */
import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SOURCES = globSync('{apps,packages}/*/src/**/*.{ts,tsx}', {
  cwd: ROOT,
  exclude: (p) => /(^|\/)(node_modules|dist)(\/|$)/.test(p),
});
const PRODUCTION = SOURCES.filter(
  (p) => !/\.test(-d)?\.tsx?$/.test(p) && !p.startsWith('packages/testing/'),
);
const CLASS = /class\s+(\w+)(?:<[^{]*?>)?\s+extends\s+(\w+)/g;

/** Names of BatonError and every class that extends it, in any number of steps. */
function batonErrorClasses(): Set<string> {
  const parents = new Map<string, string>();
  for (const path of SOURCES)
    for (const [, name, parent] of readFileSync(`${ROOT}/${path}`, 'utf8').matchAll(CLASS))
      parents.set(name!, parent!);
  const found = new Set(['BatonError']);
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, parent] of parents)
      if (found.has(parent) && !found.has(name)) grew = found.add(name).size > 0;
  }
  return found;
}

describe('Baton errors in production code', () => {
  const classes = batonErrorClasses();

  it('are found (the scan sees the hierarchy)', () => {
    for (const name of ['RunDoneError', 'LeaseLostError', 'BatonApiError', 'RedisUrlError'])
      expect(classes).toContain(name);
  });

  it('are never checked with instanceof', () => {
    const offenders: string[] = [];
    for (const path of PRODUCTION) {
      const lines = readFileSync(`${ROOT}/${path}`, 'utf8').split('\n');
      lines.forEach((line, i) => {
        for (const [, name] of line.matchAll(/instanceof\s+(\w+)/g))
          if (classes.has(name!)) offenders.push(`${path}:${i + 1} instanceof ${name}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
