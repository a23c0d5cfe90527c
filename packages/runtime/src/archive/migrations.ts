import type { PoolClient } from 'pg';

/**
 * The archive's schema, as versioned migrations: each runs once, in order, in its own
 * transaction together with its row in baton_schema_migrations. Applied by every process that
 * opens the archive, under one advisory lock, so concurrent starts (API and workers) serialize
 * and the later ones find nothing to do. A new version is appended, never edited: a database
 * that ran version n has exactly what the first n entries say.
 *
 * Why plain SQL here rather than a migration tool: the schema is small and owned by this
 * package, the runner is twenty lines, and it needs no extra dependency (node-pg-migrate would
 * bring its own CLI, config and file layout for the same advisory-lock + table scheme).
 */
const MIGRATIONS: readonly {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}[] = [
  {
    version: 1,
    name: 'runs, events, thread messages, tombstones',
    sql: `
CREATE TABLE baton_runs (
  run_id       text PRIMARY KEY,
  tenant_id    text NOT NULL,
  agent        text NOT NULL,
  thread_id    text NOT NULL,
  status       text NOT NULL,
  termination  json,
  created_at   bigint NOT NULL,
  updated_at   bigint NOT NULL,
  finished_at  bigint,
  archived_at  timestamptz NOT NULL DEFAULT now(),
  version      integer NOT NULL,
  last_seq     integer NOT NULL,
  checkpoint   json NOT NULL,
  thread_state json NOT NULL
);
-- GET /v1/runs (newest first), with or without agent/status, and a thread's runs.
CREATE INDEX baton_runs_tenant ON baton_runs (tenant_id, created_at DESC, run_id DESC);
CREATE INDEX baton_runs_tenant_agent ON baton_runs (tenant_id, agent, created_at DESC, run_id DESC);
CREATE INDEX baton_runs_tenant_status ON baton_runs (tenant_id, status, created_at DESC, run_id DESC);
CREATE INDEX baton_runs_thread ON baton_runs (tenant_id, thread_id, created_at DESC, run_id DESC);

CREATE TABLE baton_run_events (
  run_id text NOT NULL REFERENCES baton_runs (run_id) ON DELETE CASCADE,
  seq    integer NOT NULL,
  event  json NOT NULL,
  PRIMARY KEY (run_id, seq)
);

-- What each run added to its thread's history (its messages after historyLength).
CREATE TABLE baton_thread_messages (
  run_id    text NOT NULL REFERENCES baton_runs (run_id) ON DELETE CASCADE,
  idx       integer NOT NULL,
  tenant_id text NOT NULL,
  thread_id text NOT NULL,
  message   json NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE INDEX baton_thread_messages_thread ON baton_thread_messages (tenant_id, thread_id);

-- A deleted run is never archived again (an archiver that read it before the delete).
CREATE TABLE baton_deleted_runs (
  run_id     text PRIMARY KEY,
  deleted_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
  {
    version: 2,
    name: 'fairness key of each run (GET /v1/runs?fairnessKey=)',
    // Additive, for the release before and after: a nullable column the older release neither
    // writes nor reads; the trigger fills it for every insert that leaves it out (that release's
    // archiver during a rolling deploy, or after a rollback), and the UPDATE for the rows
    // already here, both from the checkpoint's identity. The column holds the effective key (the
    // tenant's when the run named none), so the filter is one indexed equality.
    //
    // A checkpoint is json text that may hold a \u0000 or surrogate escape (in a message),
    // which PostgreSQL refuses to convert when any field is read out of it (22P05): those
    // escapes are rewritten to \u0001 first, same length and shape, so the text stays valid
    // JSON (a fairness key never holds them).
    sql: `
ALTER TABLE baton_runs ADD COLUMN fairness_key text;

CREATE FUNCTION baton_fairness_key_of(checkpoint json, tenant_id text) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(
      regexp_replace(checkpoint::text, '\\\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})', '\\\\u0001', 'g')
        ::json -> 'identity' ->> 'fairnessKey',
      tenant_id)
  $$;

CREATE FUNCTION baton_runs_fill_fairness_key() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW.fairness_key IS NULL THEN
      NEW.fairness_key := baton_fairness_key_of(NEW.checkpoint, NEW.tenant_id);
    END IF;
    RETURN NEW;
  END
$$;

CREATE TRIGGER baton_runs_fill_fairness_key BEFORE INSERT ON baton_runs
  FOR EACH ROW EXECUTE FUNCTION baton_runs_fill_fairness_key();

UPDATE baton_runs SET fairness_key = baton_fairness_key_of(checkpoint, tenant_id);

CREATE INDEX baton_runs_tenant_fairness
  ON baton_runs (tenant_id, fairness_key, created_at DESC, run_id DESC);
`,
  },
];

/** Any fixed number: the lock every process that migrates this database takes. */
const MIGRATION_LOCK = 0x6261746f6e; // 'baton'

/** Applies the migrations this database has not run yet; answers the versions applied. */
export async function migrate(client: PoolClient): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS baton_schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>(
      'SELECT version FROM baton_schema_migrations',
    );
    const done = new Set(rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO baton_schema_migrations (version, name) VALUES ($1, $2)', [
          m.version,
          m.name,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
  }
}
