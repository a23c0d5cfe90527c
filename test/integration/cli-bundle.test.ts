/**
 * The repository's `baton` starts from a bundle (packages/cli/scripts/bundle.js), not from its
 * TypeScript sources (issue 37: 0.7 s per start). The bundle must never run older code than the
 * sources: it records what it was built from, and the bin rebuilds it before use when one of
 * those files changed. How fast it starts is measured by the bench (`cli-start`), not here.
 */
import { execFile } from 'node:child_process';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runCli } from '@baton/testing/cli';

const execFileAsync = promisify(execFile);
const CLI = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'cli');
const SCRIPT = join(CLI, 'scripts', 'bundle.js');
const INPUTS = join(CLI, '.cache', 'baton.inputs.json');

function record(): { startedAt: number; inputs: string[] } {
  return JSON.parse(readFileSync(INPUTS, 'utf8')) as { startedAt: number; inputs: string[] };
}

async function bundleScript(): Promise<string> {
  const { stdout } = await execFileAsync(process.execPath, [SCRIPT], { cwd: CLI });
  return stdout;
}

describe('the CLI bundle of the repository', () => {
  it('records the sources, the workspace packages and the installed dependencies it came from', async () => {
    await bundleScript();
    const { inputs } = record();
    expect(inputs).toContain('src/main.ts');
    expect(inputs).toContain('src/commands/runs-get.ts');
    expect(inputs).toContain('../client/src/index.ts');
    expect(inputs.some((f) => f.startsWith('../protocol/src/'))).toBe(true);
    expect(inputs).toContain('../../node_modules/.package-lock.json');
    expect(inputs).toContain('vite.config.ts');
  });

  it('is used while fresh, and rebuilt by the bin before use once a source changed', async () => {
    expect(await bundleScript()).toContain('is up to date');
    const source = join(CLI, 'src', 'usage-error.ts');
    const { atime } = statSync(source);
    const edited = new Date();
    // An edit, as far as mtimes go: the content stays.
    utimesSync(source, atime, edited);
    const help = await runCli(['--help'], {});
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: baton');
    // The bin rebuilt it (it did not run the old one, nor leave it stale).
    expect(record().startedAt).toBeGreaterThanOrEqual(Math.floor(edited.getTime()));
    expect(await bundleScript()).toContain('is up to date');
  }, 60_000);
});
