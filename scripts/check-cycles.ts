/**
 * Fails when the project's TypeScript sources import each other in a cycle (run by `npm run lint`).
 *
 * Built on the TypeScript compiler API the project already depends on, rather than an eslint
 * import plugin: the maintained ones pull a native resolver whose per-platform builds the npm
 * registry mirror here does not fully serve, which broke `npm ci` on a fresh clone.
 * Only relative imports inside the repository count: packages depend on each other one way (see
 * docs/ARCHITECTURE.md), so a cycle can only form inside a package.
 */
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '..');
const configPath = ts.findConfigFile(root, (f) => ts.sys.fileExists(f), 'tsconfig.json');
if (!configPath) throw new Error('check-cycles: no tsconfig.json');
const config = ts.getParsedCommandLineOfConfigFile(
  configPath,
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  },
);
if (!config) throw new Error('check-cycles: unreadable tsconfig.json');

const files = config.fileNames.filter((f) => /\.tsx?$/.test(f) && !f.includes('node_modules'));
const graph = new Map<string, string[]>();
for (const file of files) {
  const source = ts.createSourceFile(file, ts.sys.readFile(file) ?? '', ts.ScriptTarget.Latest);
  const edges: string[] = [];
  for (const statement of source.statements) {
    const spec =
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier)
        ? statement.moduleSpecifier.text
        : undefined;
    // Type-only imports count too: they vanish at runtime, but a type cycle still ties two modules
    // together so neither can be understood, moved or split alone.
    if (spec === undefined || !spec.startsWith('.')) continue;
    edges.push(resolve(dirname(file), spec));
  }
  graph.set(resolve(file), edges);
}

const state = new Map<string, 'visiting' | 'done'>();
const cycles: string[][] = [];
function visit(file: string, path: string[]): void {
  const seen = state.get(file);
  if (seen === 'done') return;
  if (seen === 'visiting') {
    cycles.push([...path.slice(path.indexOf(file)), file]);
    return;
  }
  state.set(file, 'visiting');
  for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...path, file]);
  state.set(file, 'done');
}
for (const file of graph.keys()) visit(file, []);

if (cycles.length > 0) {
  for (const cycle of cycles)
    process.stderr.write(`import cycle: ${cycle.map((f) => relative(root, f)).join(' -> ')}\n`);
  process.exit(1);
}
process.stdout.write(`no import cycles in ${graph.size} files\n`);
