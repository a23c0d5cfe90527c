/**
 * Preloaded into a child process (`NODE_OPTIONS=--import=<this file>`): records the URL of every
 * module the process resolves and writes them, one per line, to BATON_MODULE_LOG when it exits.
 * Tests use it to see which modules a real API or worker process loaded.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const out = process.env['BATON_MODULE_LOG'];
const seen = new Set<string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    seen.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => {
  if (out) writeFileSync(out, [...seen].join('\n'));
});
