/**
 * What `npm start` / `baton dev` keep between starts, in `.baton/` of the folder they run in
 * (the repository, or a `baton init` project; both gitignore it): the local API and admin keys
 * (written once, so an exported BATON_API_KEY and a console tab stay valid), the key prefix
 * used on a shared Redis, and the private redis-server's port and data (AOF). `--fresh` forgets
 * the data, never the keys.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LocalState {
  readonly apiKey: string;
  readonly adminKey: string;
  /** The prefix on a Redis found at 127.0.0.1:6379 (someone else's, perhaps). */
  readonly sharedPrefix: string;
  /** The private redis-server's last port (tried first, so REDIS_URL stays the same too). */
  readonly redisPort?: number;
}

const FILE = 'local.json';

function stateDir(cwd: string): string {
  return join(cwd, '.baton');
}

/** The private redis-server's data folder (AOF and RDB files, its pid file). */
export function redisDataDir(cwd: string): string {
  return join(stateDir(cwd), 'redis');
}

const newKey = (prefix: string): string => `${prefix}${randomBytes(18).toString('base64url')}`;

/**
 * The state of this folder, created on first use. `fresh`: a new shared-Redis prefix and an
 * empty Redis data folder, the same keys.
 */
export function loadLocalState(cwd: string, fresh: boolean): LocalState {
  const dir = stateDir(cwd);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The folder ignores itself: a project that never heard of it does not commit its keys.
  writeFileSync(join(dir, '.gitignore'), '*\n');
  let stored: Partial<LocalState> = {};
  try {
    stored = JSON.parse(readFileSync(join(dir, FILE), 'utf8')) as Partial<LocalState>;
  } catch {
    // first start here (or an unreadable file): new keys
  }
  if (fresh) rmSync(redisDataDir(cwd), { recursive: true, force: true });
  const state: LocalState = {
    apiKey: typeof stored.apiKey === 'string' ? stored.apiKey : newKey('bk_'),
    adminKey: typeof stored.adminKey === 'string' ? stored.adminKey : newKey('bk_admin_'),
    sharedPrefix:
      typeof stored.sharedPrefix === 'string' && !fresh
        ? stored.sharedPrefix
        : `baton-start-${randomBytes(4).toString('hex')}`,
    ...(typeof stored.redisPort === 'number' ? { redisPort: stored.redisPort } : {}),
  };
  saveLocalState(cwd, state);
  return state;
}

export function saveLocalState(cwd: string, state: LocalState): void {
  writeFileSync(join(stateDir(cwd), FILE), `${JSON.stringify(state, null, 2)}\n`, {
    mode: 0o600,
  });
}
