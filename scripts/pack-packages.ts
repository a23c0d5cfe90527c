/**
 * Builds the publishable packages and packs them for another project:
 *
 *   node scripts/pack-packages.ts [destination]   # default: .cache/packs
 *
 * Inside the monorepo every package exports its .ts sources, which Node 24 and vitest run as they
 * are (no build while developing). A consumer gets JavaScript and declarations instead, so each
 * package is packed from a staging copy whose manifest names dist/ files and gives sibling
 * dependencies ("*" here) the version they were packed with. Staging (rather than rewriting
 * package.json in place around `npm pack`) keeps the repo's manifests untouched, so tests that
 * resolve @baton/* keep loading sources while a pack runs. npm has no publish-time override for
 * `exports`, hence the rewrite. Publish a tarball with `npm publish <file>.tgz`.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

type Exports = Record<string, string | Record<string, string>>;
interface Manifest {
  name: string;
  version: string;
  exports?: Exports;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const root = join(import.meta.dirname, '..');
/** In dependency order: each build reads the declarations of the ones before it. */
export const PUBLISHED = [
  'packages/protocol',
  'packages/core',
  'packages/client',
  'packages/runtime',
  'apps/worker',
] as const;

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

function distExports(exports: Exports): Exports {
  return Object.fromEntries(
    Object.entries(exports).map(([subpath, target]) => {
      if (typeof target !== 'string' || !/^\.\/src\/.*\.ts$/.test(target)) return [subpath, target];
      const base = target.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '');
      return [subpath, { types: `${base}.d.ts`, default: `${base}.js` }];
    }),
  );
}

/** The manifest a consumer installs: dist/ entry points, pinned siblings, no monorepo scripts. */
export function packedManifest(
  manifest: Manifest,
  versions: ReadonlyMap<string, string>,
): Manifest {
  const { scripts: _scripts, devDependencies: _dev, ...rest } = manifest;
  const dependencies = Object.fromEntries(
    Object.entries(manifest.dependencies ?? {}).map(([name, range]) => {
      const version = versions.get(name);
      return [name, version !== undefined && range === '*' ? `^${version}` : range];
    }),
  );
  return {
    ...rest,
    ...(manifest.exports ? { exports: distExports(manifest.exports) } : {}),
    ...(manifest.dependencies ? { dependencies } : {}),
  };
}

export function packPackages(destination: string): string[] {
  mkdirSync(destination, { recursive: true });
  const versions = new Map(
    PUBLISHED.map((dir) => readManifest(join(root, dir))).map((m) => [m.name, m.version]),
  );
  const stage = mkdtempSync(join(tmpdir(), 'baton-pack-'));
  const tarballs: string[] = [];
  try {
    for (const dir of PUBLISHED) {
      const source = join(root, dir);
      rmSync(join(source, 'dist'), { recursive: true, force: true });
      execFileSync(
        process.execPath,
        [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
        { cwd: source, stdio: 'inherit' },
      );
      const manifest = readManifest(source);
      const staged = join(stage, manifest.name.replace('/', '+'));
      cpSync(join(source, 'dist'), join(staged, 'dist'), { recursive: true });
      writeFileSync(
        join(staged, 'package.json'),
        `${JSON.stringify(packedManifest(manifest, versions), null, 2)}\n`,
      );
      const out = execFileSync(
        'npm',
        ['pack', '--ignore-scripts', '--json', '--pack-destination', destination],
        { cwd: staged, encoding: 'utf8' },
      );
      const [packed] = JSON.parse(out) as { filename: string }[];
      if (!packed) throw new Error(`npm pack of ${manifest.name} reported nothing`);
      tarballs.push(join(destination, packed.filename));
    }
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return tarballs;
}

if (import.meta.main) {
  const destination = resolve(process.argv[2] ?? join(root, '.cache/packs'));
  for (const file of packPackages(destination)) console.log(file);
}
