/**
 * Test fixture: the tree of an earlier Baton release, installed and ready to start, for the
 * rolling-upgrade test (N−1 beside N on one Redis).
 *
 *   const root = await earlierRelease('7c7c246');
 *   await spawnWorker({ root, redisUrl, prefix }); await spawnApi({ root, ... });
 *
 * The tree comes from `git archive` of the commit (no worktree registration to leak), installed
 * with `npm ci --prefer-offline`, and is cached outside the checkout, keyed by the commit, so a
 * second run starts at once. Outside, because a tree inside would be picked up by vitest, tsc and
 * the linters of this checkout.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Where built releases are kept (BATON_RELEASE_CACHE, default ~/.cache/baton/releases). */
function cacheDir(): string {
  return process.env['BATON_RELEASE_CACHE'] ?? join(homedir(), '.cache', 'baton', 'releases');
}

/** The installed tree of `commit` (built on first use, minutes; cached afterwards). */
export async function earlierRelease(commit: string): Promise<string> {
  const { stdout } = await run('git', [
    '-C',
    REPO_ROOT,
    'rev-parse',
    '--verify',
    `${commit}^{commit}`,
  ]);
  const full = stdout.trim();
  const dir = join(cacheDir(), full);
  if (existsSync(join(dir, '.ready'))) return dir;
  const tmp = `${dir}.building-${String(process.pid)}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    await run('sh', ['-c', `git -C "${REPO_ROOT}" archive "${full}" | tar -x -C "${tmp}"`], {
      maxBuffer: 64 * 1024 * 1024,
    });
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: tmp,
      env: { ...process.env, CI: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    });
    writeFileSync(join(tmp, '.ready'), `${full}\n`);
    // Another run may have finished the same build meanwhile: either copy will do.
    if (!existsSync(join(dir, '.ready'))) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}
