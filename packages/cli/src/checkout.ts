import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from './usage-error.ts';

/** This package's folder (packages/cli in a checkout): src/ and dist/ are both one level down. */
function cliPackageDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i += 1) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string };
      if (name === '@baton/cli') return dir;
    }
    dir = dirname(dir);
  }
  throw new Error('cannot find the @baton/cli package folder');
}

/** Where `baton init` copies its files from. */
export function templateDir(): string {
  return join(cliPackageDir(), 'template');
}

/**
 * The Baton checkout to run and link: `explicit` (--baton), else the one this CLI runs from
 * (`npx baton` in a clone, or a project made by `baton init`, whose @baton/cli links to it).
 */
export function batonCheckout(command: string, explicit?: string): string {
  const root = explicit === undefined ? resolve(cliPackageDir(), '..', '..') : resolve(explicit);
  const looksRight =
    existsSync(join(root, 'scripts', 'start.ts')) &&
    existsSync(join(root, 'packages', 'core', 'package.json')) &&
    existsSync(join(root, 'apps', 'worker', 'src', 'main.ts'));
  if (!looksRight)
    throw new UsageError(
      explicit === undefined
        ? `${command} runs Baton from a clone of its repository (the @baton packages are not on npm yet), and this baton is not in one (${root}): run the clone's (npx baton ${command} in it)${command === 'init' ? ' or pass --baton <path of the clone>' : ''}`
        : `${root} is not a Baton clone (no scripts/start.ts, packages/core, apps/worker)`,
    );
  if (!existsSync(join(root, 'node_modules')))
    throw new UsageError(`run \`npm install\` in the Baton clone first (${root})`);
  return root;
}

/**
 * A Node that runs the checkout's TypeScript (scripts/start.ts): this one when it strips types,
 * else the checkout's own Node 24 (its `node` dev dependency). The bundled CLI also runs on the
 * system Node 20, which cannot.
 */
export function typescriptNode(root: string): string {
  if (process.features.typescript) return process.execPath;
  const own = join(root, 'node_modules', 'node', 'bin', 'node');
  return existsSync(own) ? own : process.execPath;
}
