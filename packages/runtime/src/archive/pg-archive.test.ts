import { afterAll, describe, expect, it } from 'vitest';
import { BatonError } from '@baton/core';
import { archiveConformance } from '@baton/testing/archive-conformance';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import { silentLogger } from '@baton/testing/worker-harness';
import { PgArchive } from './pg-archive.ts';

const opened: { db: TestDatabase; archive: PgArchive }[] = [];

afterAll(async () => {
  for (const { db, archive } of opened) {
    await archive.close();
    await db.drop();
  }
});

archiveConformance({
  name: 'PgArchive',
  // A database per test: nothing is shared, and the migrations run on each.
  open: async () => {
    const db = await createTestDatabase('pg_archive');
    const archive = new PgArchive({ url: db.url, logger: silentLogger });
    opened.push({ db, archive });
    return archive;
  },
});

describe('PgArchive without its server', () => {
  it('a read while PostgreSQL cannot be reached is the typed 503, not an internal error', async () => {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const archive = new PgArchive({
      url: 'postgres://postgres@127.0.0.1:1/none',
      logger: silentLogger,
    });
    const error: unknown = await archive.loadRun('t', 'r').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatonError);
    expect((error as BatonError).code).toBe('unavailable');
    await archive.close();
  });
});
