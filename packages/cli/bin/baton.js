#!/usr/bin/env node
// In the repository Node 24 runs the TypeScript sources directly (type stripping). The packed
// package ships no sources but a bundle, dist/baton.js (`npm pack` builds it), because Node does
// not strip types under node_modules.
//
// A Node that cannot strip types (the system Node 20, found first on PATH by `npx baton` or the
// scripts of a project made by `baton init`) hands over to the checkout's own Node 24, its `node`
// dev dependency, with the same arguments.
import { spawn } from 'node:child_process';
import process from 'node:process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath, URL } from 'node:url';

const sources = new URL('../src/main.ts', import.meta.url);
if (!existsSync(sources)) {
  await import(new URL('../dist/baton.js', import.meta.url).href);
} else if (process.features.typescript) {
  await import(sources.href);
} else {
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
