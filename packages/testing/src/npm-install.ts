/**
 * `npm install` for the tests' scratch projects, from npm's cache when it can: `npm ci` of the
 * clone put every package these projects need there, so the registry is asked only when the cache
 * lacks something (ENOTCACHED), not on every run. A registry that fails for a few minutes (seen:
 * its TLS certificate refused mid-CI) then no longer fails the suite.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface NpmInstallOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeout?: number;
}

export async function npmInstallCached(
  args: readonly string[],
  opts: NpmInstallOptions,
): Promise<{ readonly offline: boolean }> {
  const common = ['install', '--no-audit', '--no-fund', '--loglevel=error', ...args];
  try {
    await run('npm', [...common, '--offline'], opts);
    return { offline: true };
  } catch (error) {
    const text = `${(error as { stderr?: string }).stderr ?? ''}${String(error)}`;
    if (!text.includes('ENOTCACHED')) throw error;
  }
  await run('npm', [...common, '--prefer-offline'], opts);
  return { offline: false };
}
