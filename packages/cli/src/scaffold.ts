import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { UsageError } from './usage-error.ts';

export interface ScaffoldOptions {
  readonly dir: string;
  readonly cwd: string;
  /** The Baton checkout the project links to. */
  readonly baton: string;
  readonly template: string;
  readonly force: boolean;
}

/** Template file → its name in the project (npm pack drops dotfiles such as .gitignore). */
const FILES: Readonly<Record<string, string>> = {
  'agents.ts': 'agents.ts',
  'baton.agents.yaml': 'baton.agents.yaml',
  'env.example': '.env.example',
  gitignore: '.gitignore',
  'README.md': 'README.md',
  'tsconfig.json': 'tsconfig.json',
};

const AGENT_SOURCES = 'agents.ts baton.agents.yaml';

function versionOf(
  baton: string,
  manifest: string,
  dependency: string,
  field: 'dependencies' | 'devDependencies' = 'dependencies',
): string {
  const { [field]: dependencies = {} } = JSON.parse(
    readFileSync(join(baton, manifest), 'utf8'),
  ) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const version = dependencies[dependency];
  if (version === undefined) throw new Error(`${manifest} does not depend on ${dependency}`);
  return version;
}

/** `file:` paths are relative (the project and the clone usually move together). */
function fileLink(projectDir: string, target: string): string {
  const rel = relative(projectDir, target).split(sep).join('/');
  return `file:${rel.startsWith('.') ? rel : `./${rel}`}`;
}

/**
 * The project's package.json: @baton/core (types, defineTool) and @baton/cli (`baton dev`, the
 * CLI) linked to the checkout (nothing @baton/* is on npm), zod and the OpenAI provider at the
 * versions Baton uses, `dev` naming the agent sources it runs, and `typecheck` (tsc with the
 * TypeScript and Node types Baton uses): Node only strips types, so without it a type error
 * surfaces as a failing tool at run time.
 */
function projectManifest(name: string, projectDir: string, baton: string): object {
  return {
    name,
    version: '0.0.0',
    private: true,
    type: 'module',
    description: 'Agents for Baton',
    scripts: {
      dev: `baton dev ${AGENT_SOURCES}`,
      start: `baton dev --no-watch ${AGENT_SOURCES}`,
      typecheck: 'tsc --noEmit -p tsconfig.json',
    },
    dependencies: {
      '@ai-sdk/openai': versionOf(baton, 'apps/worker/package.json', '@ai-sdk/openai'),
      '@baton/core': fileLink(projectDir, join(baton, 'packages', 'core')),
      zod: versionOf(baton, 'packages/core/package.json', 'zod'),
    },
    devDependencies: {
      '@baton/cli': fileLink(projectDir, join(baton, 'packages', 'cli')),
      '@types/node': versionOf(baton, 'package.json', '@types/node', 'devDependencies'),
      typescript: versionOf(baton, 'package.json', 'typescript', 'devDependencies'),
    },
  };
}

/** An npm package name from a folder name ("My Agents" → "my-agents"). */
function packageName(dir: string): string {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|-+$/g, '');
  return name || 'my-agents';
}

export async function scaffold(
  opts: ScaffoldOptions,
): Promise<{ dir: string; relative: string; files: string[] }> {
  const dir = resolve(opts.cwd, opts.dir);
  if (existsSync(dir)) {
    const present = (await readdir(dir)).filter((f) => f !== '.git');
    if (present.length > 0 && !opts.force)
      throw new UsageError(
        `${dir} is not empty (${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}); choose a new folder or pass --force`,
      );
  }
  await mkdir(dir, { recursive: true });
  const name = packageName(dir);
  const batonPath = relative(dir, opts.baton) || '.';
  const files: string[] = [];
  for (const [from, to] of Object.entries(FILES)) {
    const text = (await readFile(join(opts.template, from), 'utf8'))
      .replaceAll('{{name}}', name)
      .replaceAll('{{baton}}', batonPath);
    await writeFile(join(dir, to), text);
    files.push(to);
  }
  await writeFile(
    join(dir, 'package.json'),
    `${JSON.stringify(projectManifest(name, dir, opts.baton), null, 2)}\n`,
  );
  files.push('package.json');
  return { dir, relative: relative(opts.cwd, dir) || '.', files };
}
