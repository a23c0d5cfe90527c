import { afterAll } from 'vitest';
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
