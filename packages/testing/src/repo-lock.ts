/**
 * A lock between test files that run side by side on one checkout, for the few steps that write
 * into the repository itself: `npm pack` of packages/cli builds dist/ (prepack) and deletes it
 * (postpack), so two packs at once would remove each other's bundle mid-pack.
 *
 * A directory under .cache/locks is the lock (mkdir is atomic); it holds the owner's pid, and a
 * lock whose owner is dead (a killed run) is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const LOCKS = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '.cache', 'locks');

function ownerAlive(dir: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
  } catch {
    return true; // being written: its owner is alive
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `work` holding the lock `name`, waiting (up to `timeoutMs`) for another holder. */
export async function withRepoLock<T>(
  name: string,
  work: () => Promise<T> | T,
  timeoutMs = 120_000,
): Promise<T> {
  mkdirSync(LOCKS, { recursive: true });
  const dir = join(LOCKS, name);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!ownerAlive(dir)) {
        rmSync(dir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`repo lock ${name}: still held after ${timeoutMs} ms`, { cause: err });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
