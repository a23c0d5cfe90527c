/**
 * A database of its own for each test file on the PostgreSQL the machine runs (PG_TEST_URL,
 * default postgres://postgres@127.0.0.1:5432/postgres: trust auth). The database is created
 * empty and dropped (connections and all) by `drop()`; a test never touches another's.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { runTempPrefix } from './run-processes.ts';

const PG_ADMIN_URL = process.env['PG_TEST_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** postgres://… of the new database (what ARCHIVE_URL is set to). */
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

/** The URL of database `name` on the server `base` points at. */
function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** `label` names the test file (lower-case letters, digits, '_'); a random suffix makes it unique. */
export async function createTestDatabase(
  label: string,
  adminUrl = PG_ADMIN_URL,
): Promise<TestDatabase> {
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 30);
  const name = `baton_t_${safe}_${randomBytes(4).toString('hex')}`;
  await admin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  return {
    name,
    url: databaseUrl(adminUrl, name),
    drop: () =>
      admin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

async function admin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const PG_BIN = process.env['PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  /** Stops the server (fast shutdown: connections are cut, as in a restart). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it, removes its data directory. */
  destroy(): Promise<void>;
}

/** Runs `cmd` as the postgres user when this process is root (initdb refuses root). */
function asPostgres(cmd: string, args: readonly string[]): { file: string; args: string[] } {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return root
    ? { file: 'runuser', args: ['-u', 'postgres', '--', cmd, ...args] }
    : { file: cmd, args: [...args] };
}

async function run(file: string, args: readonly string[]): Promise<void> {
  const { execFile } = await import('node:child_process');
  await new Promise<void>((resolve, reject) => {
    execFile(file, args, { timeout: 60_000 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve();
    });
  });
}

/**
 * A PostgreSQL server of the test's own (initdb in a temporary directory, a free port, trust
 * auth): what a test that restarts PostgreSQL restarts, so the machine's shared server (other
 * tests' databases) is never touched.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const { mkdtemp, rm, chown } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const { createServer } = await import('node:net');
  const dir = await mkdtemp(runTempPrefix('baton-pg'));
  const data = join(dir, 'data');
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (root) {
    const { execFileSync } = await import('node:child_process');
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    await chown(dir, uid, gid);
  }
  const port = await new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no free port'));
      });
    });
  });
  const init = asPostgres(`${PG_BIN}/initdb`, ['-D', data, '-U', 'postgres', '-A', 'trust']);
  await run(init.file, init.args);
  const pgCtl = (...args: string[]): Promise<void> => {
    const c = asPostgres(`${PG_BIN}/pg_ctl`, ['-D', data, ...args]);
    return run(c.file, c.args);
  };
  const options = `-p ${String(port)} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = (): Promise<void> => pgCtl('-w', '-l', join(dir, 'log'), '-o', options, 'start');
  const stop = (): Promise<void> => pgCtl('-w', '-m', 'fast', 'stop');
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${String(port)}/postgres`,
    port,
    start,
    stop,
    destroy: async () => {
      await stop().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
