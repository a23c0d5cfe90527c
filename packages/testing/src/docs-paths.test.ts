/**
 * The docs' file map is a promise: every source or doc file that README.md, the docs/ pages and
 * the run record's README name in backticks exists in the tree, and every relative link between
 * them points at a file, so a move or a rename that forgets the docs fails here instead of leaving
 * readers a path to nowhere. The other way round, docs/ARCHITECTURE.md names every source folder
 * of the apps and packages, so a new folder comes with its line in the map.
 */
import { existsSync, globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const DOCS = [
  'README.md',
  ...globSync('docs/*.md', { cwd: ROOT }).sort(),
  'packages/runtime/src/run-record/README.md',
];
/** A relative Markdown link, `[text](path)` or `[text](path#anchor)`, not a URL. */
const LINK = /\]\((?!https?:|#|mailto:)([^)#\s]+)(?:#[^)\s]*)?\)/g;
const FILE = /`([A-Za-z0-9_.\-/]+\.(?:ts|tsx|md|json|jsonc|yml|yaml|sh))`/g;
const IGNORED = /(^|\/)(node_modules|dist|coverage|\.git)(\/|$)/;
/** A folder in backticks, written with its trailing slash (`packages/runtime/src/config/`). */
const FOLDER = /`([A-Za-z0-9_-][A-Za-z0-9_.\-/]*)\/`/g;
/** Build output and a user project's folders, which the tree does not hold. */
const NOT_IN_TREE = new Set(['dist', '.baton']);

/** Where a named path may live: as written from the root, or under a package or app folder. */
function exists(path: string, doc: string): boolean {
  const bases = [ROOT, join(ROOT, 'packages'), join(ROOT, 'apps'), join(ROOT, doc, '..')];
  if (bases.some((base) => existsSync(join(base, path)))) return true;
  // A bare or partial name ("lease-release.ts", "src/main.ts") names a file somewhere in the tree.
  return globSync(`**/${path}`, { cwd: ROOT, exclude: (p) => IGNORED.test(p) }).length > 0;
}

describe('the file paths the docs name', () => {
  it.each(DOCS)('exist in the tree: %s', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const named = [...new Set([...text.matchAll(FILE)].map((m) => m[1] ?? ''))].filter(
      // Extensions alone (".d.ts") and URL paths ("/openapi.json") are not files of the tree.
      (p) => !p.startsWith('.') && !p.startsWith('/'),
    );
    // The file map itself: README and ARCHITECTURE name files (a regex that stopped matching
    // would otherwise pass every page).
    if (doc === 'README.md' || doc === 'docs/ARCHITECTURE.md')
      expect(named.length).toBeGreaterThan(0);
    expect(named.filter((p) => !exists(p, doc))).toEqual([]);
  });

  it.each(DOCS)('and its links lead to files: %s', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const links = [...new Set([...text.matchAll(LINK)].map((m) => m[1] ?? ''))];
    expect(links.filter((link) => !existsSync(join(ROOT, doc, '..', link)))).toEqual([]);
  });
});

describe("docs/ARCHITECTURE.md's file map", () => {
  const text = readFileSync(join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8');

  it('names only folders that exist', () => {
    const named = [...new Set([...text.matchAll(FOLDER)].map((m) => m[1] ?? ''))].filter(
      (p) => !NOT_IN_TREE.has(p),
    );
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((p) => !exists(p, 'docs/ARCHITECTURE.md'))).toEqual([]);
  });

  it('names every source folder of the apps and packages by its path', () => {
    const folders = globSync(['apps/*/src/**/', 'packages/*/src/**/'], {
      cwd: ROOT,
      exclude: (p) => IGNORED.test(p),
    })
      .map((p) => p.replace(/\/$/, ''))
      .filter((p) => !/\/src$/.test(p))
      .sort();
    expect(folders.length).toBeGreaterThan(10);
    expect(folders.filter((folder) => !text.includes(folder))).toEqual([]);
  });
});
