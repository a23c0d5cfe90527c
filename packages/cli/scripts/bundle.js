// The repository's fast start for `baton` (bin/baton.js): one bundled ES module,
// .cache/baton.js, instead of ~100 TypeScript sources that Node would type-strip and zod schemas
// it would build at every start (0.5-0.7 s against 0.1 s for the bundle on a quiet machine).
//
// The bundle must never run code older than the sources, so the build records every file it was
// made from (packages/cli/.cache/baton.inputs.json, paths relative to packages/cli) and when it
// started; the bin uses the bundle only while none of them changed since, and rebuilds it (about
// 1 s, once) otherwise. node_modules/.package-lock.json stands for the installed dependencies:
// npm rewrites it on every install. Plain JavaScript, like the bin: the freshness check runs on
// the system Node 20 too, which then needs no Node 24 at all.
//
//   node packages/cli/scripts/bundle.js [--force]   # build it unless fresh (the integration
//                                                  # tests' set-up and the bench do)
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const CLI_DIR = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(CLI_DIR, '.cache');
export const BUNDLE = join(CACHE, 'baton.js');
const INPUTS = join(CACHE, 'baton.inputs.json');
/** Not modules of the bundle but what it is built with. */
const BUILD_INPUTS = [
  'vite.config.ts',
  'package.json',
  'scripts/bundle.js',
  '../../node_modules/.package-lock.json',
];

/**
 * The bundle's path when it was built from the files as they are now, else undefined.
 * @returns {string | undefined}
 */
export function freshBundle() {
  try {
    const { startedAt, inputs } = JSON.parse(readFileSync(INPUTS, 'utf8'));
    if (typeof startedAt !== 'number' || !Array.isArray(inputs) || inputs.length === 0)
      return undefined;
    if (!existsSync(BUNDLE)) return undefined;
    for (const input of inputs)
      if (statSync(join(CLI_DIR, input)).mtimeMs > startedAt) return undefined;
    return BUNDLE;
  } catch {
    // No record, unreadable, or an input is gone: not fresh.
    return undefined;
  }
}

/**
 * Builds the bundle (vite, with vite.config.ts, as `npm pack` does for dist/) and records its
 * inputs. Concurrent builds are safe: each writes its own folder and renames into place.
 * @returns {Promise<string>}
 */
export async function buildBundle() {
  const startedAt = Date.now();
  const out = join(CACHE, `build-${process.pid}-${startedAt}`);
  mkdirSync(CACHE, { recursive: true });
  try {
    const { build } = await import('vite');
    const result = await build({
      configFile: join(CLI_DIR, 'vite.config.ts'),
      logLevel: 'silent',
      build: { outDir: out, emptyOutDir: true },
    });
    const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) =>
      'output' in r ? r.output : [],
    );
    const modules = outputs.flatMap((o) => ('moduleIds' in o ? o.moduleIds : []));
    const inputs = [
      ...new Set(
        [
          ...modules.filter((id) => id.startsWith(sep) && existsSync(id)),
          ...BUILD_INPUTS.map((f) => resolve(CLI_DIR, f)),
        ]
          .map((file) => relative(CLI_DIR, file))
          .filter((file) => existsSync(join(CLI_DIR, file))),
      ),
    ].sort();
    if (modules.length === 0) throw new Error('vite reported no modules for the CLI bundle');
    renameSync(join(out, 'baton.js'), BUNDLE);
    const record = join(out, 'baton.inputs.json');
    writeFileSync(record, `${JSON.stringify({ startedAt, inputs }, null, 1)}\n`);
    renameSync(record, INPUTS);
    return BUNDLE;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const t0 = Date.now();
  const fresh = process.argv.includes('--force') ? undefined : freshBundle();
  const file = fresh ?? (await buildBundle());
  process.stdout.write(
    `${relative(process.cwd(), file)} ${fresh ? 'is up to date' : `built in ${Date.now() - t0} ms`}\n`,
  );
}
