#!/usr/bin/env node
// `baton` starts from one bundled ES module, never from the TypeScript sources when it can help
// it: type-stripping ~100 files and building their zod schemas took 0.5-0.7 s per start.
// - The packed package ships no sources, only dist/baton.js (`npm pack` builds it).
// - In the repository, packages/cli/.cache/baton.js (scripts/bundle.js), used only while it is
//   newer than every file it was built from, and rebuilt (about 1 s, once) when one changed.
//   It runs on the system Node 20 too (the packed bundle is tested there).
// - Without a bundle (its build failed, e.g. on a syntax error the sources then report), Node 24
//   runs the sources directly (type stripping). A Node that cannot strip types (the system Node
//   20, found first on PATH by `npx baton` or the scripts of a project made by `baton init`)
//   hands over to the checkout's own Node 24, its `node` dev dependency, with the same arguments.
import { spawn } from 'node:child_process';
import process from 'node:process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { constants } from 'node:os';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';

// V8's compiled code for the bundle, kept between starts (Node 22.1+; nothing on Node 20): about
// half of what a start costs is compiling the bundle's 700 kB again.
module.enableCompileCache?.();
const sources = new URL('../src/main.ts', import.meta.url);
if (!existsSync(sources)) {
  await import(new URL('../dist/baton.js', import.meta.url).href);
} else {
  const { buildBundle, freshBundle } = await import('../scripts/bundle.js');
  let bundle = freshBundle();
  if (bundle === undefined && process.features.typescript)
    bundle = await buildBundle().catch(() => undefined);
  if (bundle !== undefined) await import(pathToFileURL(bundle).href);
  else if (process.features.typescript) await import(sources.href);
  else {
    const node = fileURLToPath(new URL('../../../node_modules/node/bin/node', import.meta.url));
    if (!existsSync(node)) {
      process.stderr.write(
        `baton: Node ${process.version} cannot run Baton's TypeScript (Node >= 22.18 can), and the checkout has no Node 24 of its own (${node}): run \`npm install\` in the Baton clone, or put a Node 24 first on PATH (source scripts/ensure-node.sh)\n`,
      );
      process.exit(1);
    }
    const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: 'inherit',
    });
    // Ctrl-C reaches the child too (same process group): only pass on what was sent to us alone.
    process.on('SIGINT', () => undefined);
    for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
    child.on('exit', (code, signal) => {
      process.exit(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 1));
    });
  }
}
