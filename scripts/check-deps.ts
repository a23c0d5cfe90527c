/**
 * Fails when a workspace imports a package its package.json does not declare (run by
 * `npm run lint`). knip finds most of these, but it counts a package as declared when it is a peer
 * dependency of a declared one (apps/worker used zod through @modelcontextprotocol/sdk's peer),
 * and it does not tell run-time imports from type-only ones. Here:
 * - a run-time import in a workspace's src must be in its `dependencies` (or peer/optional
 *   ones): the published package needs it installed;
 * - a type-only import, or any import in a test file, may also be in its `devDependencies`, and a
 *   test may use the root's (vitest, the Redis test containers);
 * - test/, bench/, examples/ and scripts/ belong to the root package, which is never published:
 *   its devDependencies and the workspaces themselves (linked by npm) are what they may import.
 * Bundled workspaces (the CLI: vite inlines everything at pack time) declare what they bundle as
 * devDependencies.
 */
import { globSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

interface Manifest {
  name?: string;
  workspaces?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const BUNDLED = new Set(['@baton/cli']);

const root = resolve(import.meta.dirname, '..');
const readManifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
const names = (...records: (Record<string, string> | undefined)[]): Set<string> =>
  new Set(records.flatMap((r) => Object.keys(r ?? {})));
const builtins = new Set(builtinModules);
const isTest = (file: string): boolean => /\.test(-d)?\.tsx?$/.test(file);

/** Bare package specifiers a file imports, and whether each import is type-only. */
function importsOf(file: string): { pkg: string; typeOnly: boolean }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found: { pkg: string; typeOnly: boolean }[] = [];
  const add = (spec: string, typeOnly: boolean): void => {
    if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) return;
    const parts = spec.split('/');
    const pkg = spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec);
    if (!builtins.has(pkg)) found.push({ pkg, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const clause = ts.isImportDeclaration(node) ? node.importClause : undefined;
      const typeOnly = ts.isImportDeclaration(node)
        ? clause?.isTypeOnly === true ||
          (clause !== undefined &&
            clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly))
        : node.isTypeOnly;
      add(node.moduleSpecifier.text, typeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const rootManifest = readManifest(root);
const rootDev = names(rootManifest.dependencies, rootManifest.devDependencies);
const workspaces = rootManifest.workspaces ?? [];
const workspaceNames = new Set(workspaces.map((dir) => readManifest(join(root, dir)).name ?? ''));
const units = [
  ...workspaces.map((dir) => ({ dir, globs: ['src/**/*.{ts,tsx}'] })),
  { dir: '.', globs: ['test/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts', 'scripts/**/*.ts'] },
];

const problems: string[] = [];
for (const { dir, globs } of units) {
  const abs = join(root, dir);
  const manifest = readManifest(abs);
  const runtime = names(
    manifest.dependencies,
    manifest.peerDependencies,
    manifest.optionalDependencies,
    BUNDLED.has(manifest.name ?? '') || dir === '.' ? manifest.devDependencies : undefined,
  );
  if (dir === '.') for (const name of workspaceNames) runtime.add(name);
  const any = names(
    manifest.dependencies,
    manifest.peerDependencies,
    manifest.optionalDependencies,
    manifest.devDependencies,
  );
  const files = globSync(globs, { cwd: abs, exclude: (f) => f.includes('node_modules') });
  for (const rel of files) {
    const file = join(abs, rel);
    for (const { pkg, typeOnly } of importsOf(file)) {
      if (pkg === manifest.name || runtime.has(pkg)) continue;
      if ((typeOnly || isTest(file)) && any.has(pkg)) continue;
      if (isTest(file) && rootDev.has(pkg)) continue;
      const where = relative(root, file);
      problems.push(
        any.has(pkg)
          ? `${where}: imports ${pkg} at run time, but ${dir}/package.json has it in devDependencies only`
          : `${where}: imports ${pkg}, which ${dir}/package.json does not declare`,
      );
    }
  }
}

if (problems.length > 0) {
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  process.exit(1);
}
process.stdout.write(`every workspace declares what it imports (${units.length} packages)\n`);
