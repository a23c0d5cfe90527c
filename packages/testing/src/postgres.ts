/**
 * A database of its own for each test file on the PostgreSQL the machine runs (PG_TEST_URL,
 * default postgres://postgres@127.0.0.1:5432/postgres: trust auth). The database is created
 * empty and dropped (connections and all) by `drop()`; a test never touches another's.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN_URL =
  process.env['PG_TEST_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** postgres://… of the new database (what ARCHIVE_URL is set to). */
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

/** The URL of database `name` on the server `base` points at. */
export function databaseUrl(base: string, name: string): string {
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
