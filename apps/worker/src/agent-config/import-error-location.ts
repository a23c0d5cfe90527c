import { isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Baton's own code (the loader's frames sit under every import error's stack). */
const BATON_ROOT = resolve(import.meta.dirname, '..', '..', '..', '..');
const BATON_CODE = [join(BATON_ROOT, 'apps'), join(BATON_ROOT, 'packages')].map((d) => `${d}/`);

/**
 * Where an agents module failed to load, as `file:line:column` (relative to `cwd` when inside
 * it), for the one line `baton dev` shows: Node's message alone ("Expected ',', got ';'") names
 * no place. A syntax error (type stripping's or V8's) carries it in the header Node puts on its
 * stack (`<file>:<line>`, the source line, a caret under the column); an error thrown while the
 * module runs, in its first stack frame outside Node, node_modules and Baton's own packages.
 */
export function importErrorLocation(error: unknown, cwd: string): string | undefined {
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  // Type stripping shows the lines around the error too; the caret sits under the error's line.
  const header = /^(.+):(\d+)\n(?:.*\n){1,3}?( *)\^+ *\n/.exec(stack);
  if (header) return place(header[1]!, header[2]!, String(header[3]!.length + 1), cwd);
  for (const frame of stack.matchAll(/(?:\(|at )((?:file:\/\/)?\/[^\s()]+?):(\d+):(\d+)\)?$/gm)) {
    const file = frame[1]!.startsWith('file://') ? fileURLToPath(frame[1]!) : frame[1]!;
    if (file.includes('/node_modules/') || BATON_CODE.some((d) => file.startsWith(d))) continue;
    return place(file, frame[2]!, frame[3]!, cwd);
  }
  return undefined;
}

function place(file: string, line: string, column: string, cwd: string): string {
  const path = file.startsWith('file://') ? fileURLToPath(file) : file;
  const rel = isAbsolute(path) ? relative(cwd, path) : path;
  const shown = rel !== '' && !rel.startsWith('..') ? rel : path;
  return `${shown}:${line}:${column}`;
}
