import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { BatonError } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import { archiveConformance } from '@baton/testing/archive-conformance';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import { createdRun } from '@baton/testing/run-store-fixtures';
import { silentLogger } from '@baton/testing/worker-harness';
import { PgArchive } from './pg-archive.ts';

const opened: { db: TestDatabase; archive: PgArchive }[] = [];

// A dozen databases to drop (WITH FORCE), each a second or more on a loaded machine.
afterAll(async () => {
  for (const { archive } of opened) await archive.close();
  for (const db of new Set(opened.map((o) => o.db))) await db.drop();
}, 120_000);

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

describe('PgArchive migration 2 (fairness keys), with the release before it', () => {
  /** A finished run whose messages hold the escapes PostgreSQL will not read out of json. */
  function finished(createdAt: number, fairnessKey?: string): Checkpoint {
    const { checkpoint } = createdRun(fairnessKey === undefined ? {} : { fairnessKey }, createdAt);
    return {
      ...checkpoint,
      status: 'done',
      messages: [
        ...checkpoint.messages,
        {
          id: 'm-escapes',
          role: 'user',
          content: 'nul \u0000, lone \ud800, pair \ud83d\ude00, \\u0000',
        },
      ],
      termination: { kind: 'natural_end' },
      finishedAt: createdAt + 1,
    };
  }

  /** An insert as the release before migration 2 writes it: no fairness_key column. */
  async function insertAsReleaseBefore(client: pg.Client, cp: Checkpoint): Promise<void> {
    await client.query(
      `INSERT INTO baton_runs (run_id, tenant_id, agent, thread_id, status, termination,
         created_at, updated_at, finished_at, version, last_seq, checkpoint, thread_state)
       VALUES ($1, $2, $3, $4, 'done', '{"kind":"natural_end"}', $5, $5, $5, 3, 0, $6, '{}')`,
      [
        cp.identity.runId,
        cp.identity.tenantId,
        cp.identity.agent,
        cp.identity.threadId,
        cp.createdAt,
        JSON.stringify(cp),
      ],
    );
  }

  it('fills the key of runs archived before it and of runs the release before archives after it', async () => {
    const db = await createTestDatabase('pg_archive_m2');
    const first = new PgArchive({ url: db.url, logger: silentLogger });
    opened.push({ db, archive: first });
    await first.open();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // Back to the schema of version 1, as a database the release before migrated.
      await client.query(`DROP TRIGGER baton_runs_fill_fairness_key ON baton_runs;
        DROP FUNCTION baton_runs_fill_fairness_key(); DROP FUNCTION baton_fairness_key_of(json, text);
        ALTER TABLE baton_runs DROP COLUMN fairness_key;
        DELETE FROM baton_schema_migrations WHERE version = 2`);
      await first.close();
      const before = [finished(1_000, 'user-1'), finished(1_001), finished(1_002, 'user-2')];
      for (const cp of before) await insertAsReleaseBefore(client, cp);

      const archive = new PgArchive({ url: db.url, logger: silentLogger });
      opened.push({ db, archive });
      await archive.open();
      // The release before, still running during the deploy, archives one more run.
      const during = finished(1_003, 'user-1');
      await insertAsReleaseBefore(client, during);

      const ids = async (fairnessKey: string) =>
        (await archive.listRuns({ tenantId: 'tenant-a', fairnessKey, limit: 10 })).map(
          (r) => r.runId,
        );
      expect(await ids('user-1')).toEqual([during.identity.runId, before[0]!.identity.runId]);
      expect(await ids('user-2')).toEqual([before[2]!.identity.runId]);
      // A run that named no key has its tenant's.
      expect(await ids('tenant-a')).toEqual([before[1]!.identity.runId]);
      // Its checkpoint reads back unchanged: only the key's extraction rewrote the escapes.
      expect(await archive.loadRun('tenant-a', before[0]!.identity.runId)).toEqual({
        checkpoint: before[0],
        version: 3,
      });
    } finally {
      await client.end();
    }
  });
});

describe('PgArchive and values PostgreSQL refuses', () => {
  it('a value PostgreSQL cannot compare is the typed 400, not an internal error', async () => {
    const db = await createTestDatabase('pg_archive_refused');
    const archive = new PgArchive({ url: db.url, logger: silentLogger });
    opened.push({ db, archive });
    const refused: (() => Promise<unknown>)[] = [
      () => archive.listRuns({ tenantId: 'a\0b', limit: 1 }),
      () => archive.listRuns({ tenantId: 't', agent: '\0', limit: 1 }),
      () => archive.listRuns({ tenantId: 't', after: { createdAt: 1.5, runId: 'x' }, limit: 1 }),
      () =>
        archive.listRuns({ tenantId: 't', after: { createdAt: 2 ** 63, runId: 'x' }, limit: 1 }),
      () => archive.loadRun('t', 'run\0'),
    ];
    for (const read of refused) {
      const error: unknown = await read().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BatonError);
      expect((error as BatonError).code).toBe('bad_request');
    }
  });

  it("events after a seq past the log's end (a tree cursor's 15 digits) are none, not an error", async () => {
    const db = await createTestDatabase('pg_archive_seq');
    const archive = new PgArchive({ url: db.url, logger: silentLogger });
    opened.push({ db, archive });
    const cp = finished2(2_000);
    await archive.putRuns([
      { checkpoint: cp, version: 1, events: [], threadState: {}, addsToThread: true },
    ]);
    expect(await archive.readEvents('tenant-a', cp.identity.runId, 999_999_999_999_999)).toEqual(
      [],
    );
  });
});

function finished2(createdAt: number): Checkpoint {
  const { checkpoint } = createdRun({}, createdAt);
  return { ...checkpoint, status: 'done', finishedAt: createdAt + 1 };
}
