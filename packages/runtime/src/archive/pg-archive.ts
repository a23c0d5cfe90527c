import type {
  ArchiveListQuery,
  ArchivedRun,
  ArchivedRunSummary,
  ArchivedThread,
  RunArchive,
  StoredCheckpoint,
} from '@baton/core';
import type { Checkpoint, JsonValue, Message, RunEvent, RunStatus } from '@baton/protocol';
import type { Pool, PoolClient } from 'pg';
import type { Logger } from 'pino';
import { migrate } from './migrations.ts';
import {
  ArchiveUnavailableError,
  isArchiveUnavailable,
} from '../errors/archive-unavailable-error.ts';
import {
  ArchiveValueRefusedError,
  isArchiveValueRefused,
} from '../errors/archive-value-refused-error.ts';

/**
 * A connection-level failure as the typed 503, a value PostgreSQL refused (22xxx) as the typed
 * 400; any other error (a wrong query) stays what it is.
 */
function unavailable(error: unknown): never {
  if (isArchiveUnavailable(error)) throw new ArchiveUnavailableError(error);
  if (isArchiveValueRefused(error)) throw new ArchiveValueRefusedError(error);
  throw error;
}

export interface PgArchiveOptions {
  /** postgres://… (ARCHIVE_URL). */
  readonly url: string;
  readonly logger: Logger;
  /** Connections in the pool (default 4). */
  readonly poolSize?: number;
}

/**
 * A run's agent version, read from its checkpoint's text with a pattern, not as JSON: no
 * migration adds a column for it, and PostgreSQL refuses to take a \u0000 anywhere in a
 * checkpoint (a message may hold one) to text through -> / ->>. Versions hold only
 * [A-Za-z0-9._-], and the pattern is anchored in `identity` (which may nest one flat object,
 * `parent`), so nothing a message holds can match it.
 */
const AGENT_VERSION_RE = `'"identity":\\{[^{}]*(?:\\{[^{}]*\\}[^{}]*)?"agentVersion":"([A-Za-z0-9._-]+)"'`;

const SUMMARY_COLUMNS = `run_id, tenant_id, agent, thread_id, status,
  created_at::float8 AS created_at, updated_at::float8 AS updated_at,
  substring(checkpoint::text from ${AGENT_VERSION_RE}) AS agent_version`;

interface SummaryRow {
  run_id: string;
  tenant_id: string;
  agent: string;
  thread_id: string;
  status: string;
  created_at: number;
  updated_at: number;
  /** From the checkpoint (no column of its own); null on runs created before versions. */
  agent_version: string | null;
}

/**
 * The archive on PostgreSQL (node-postgres). `pg` is imported on first use, so a process
 * without ARCHIVE_URL never loads it; the schema is migrated on that first use too (and at
 * start, by `open()`, so a bad URL fails the start, not the first read).
 *
 * JSON columns are `json`, not `jsonb`: a checkpoint or event reads back as the text it was
 * written, keys in the same order, so an archived run's body is the body clients saw live.
 */
export class PgArchive implements RunArchive {
  private readonly opts: PgArchiveOptions;
  private pool: Promise<Pool> | null = null;
  /** Set by close(): a late caller (a request or archive pass finishing during shutdown) must not
   * open a pool nobody will end — its connections would outlive the process's stop. */
  private closed = false;

  constructor(opts: PgArchiveOptions) {
    this.opts = opts;
  }

  /** Connects and migrates (idempotent); every other method calls it first. */
  open(): Promise<Pool> {
    if (this.closed)
      return Promise.reject(new ArchiveUnavailableError(new Error('the archive was closed')));
    this.pool ??= this.connect().catch((error: unknown) => {
      this.pool = null;
      return unavailable(error);
    });
    return this.pool;
  }

  private async connect(): Promise<Pool> {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      connectionString: this.opts.url,
      max: this.opts.poolSize ?? 4,
      connectionTimeoutMillis: 10_000,
    });
    // An idle connection dropped by a PostgreSQL restart: the pool replaces it; without a
    // listener the error would end the process.
    pool.on('error', (err) => this.opts.logger.warn({ err }, 'archive: idle connection lost'));
    const client = guarded(await pool.connect());
    try {
      const applied = await migrate(client);
      if (applied.length > 0)
        this.opts.logger.info({ applied }, 'archive: schema migrations applied');
    } finally {
      client.release();
    }
    return pool;
  }

  private async tx<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = guarded(await (await this.open()).connect().catch(unavailable));
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      return unavailable(error);
    } finally {
      client.release();
    }
  }

  private async query<R extends object>(sql: string, params: unknown[]): Promise<R[]> {
    const pool = await this.open();
    const { rows } = await pool.query<R>(sql, params).catch(unavailable);
    return rows;
  }

  async putRuns(runs: readonly ArchivedRun[]): Promise<void> {
    if (runs.length === 0) return;
    const byId = new Map(runs.map((r) => [r.checkpoint.identity.runId, r]));
    const ids = [...byId.keys()].sort();
    await this.tx(async (client) => {
      // Serializes with deleteRun on the same ids: a delete either sees this write, or this
      // write sees its tombstone; never a run deleted and then archived again.
      await client.query(
        'SELECT pg_advisory_xact_lock(hashtextextended(id, 0)) FROM unnest($1::text[]) AS id ORDER BY id',
        [ids],
      );
      const { rows } = await client.query<{ run_id: string }>(
        `INSERT INTO baton_runs (run_id, tenant_id, agent, thread_id, status, termination,
           created_at, updated_at, finished_at, version, last_seq, checkpoint, thread_state,
           fairness_key)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
           $6::json[], $7::bigint[], $8::bigint[], $9::bigint[], $10::int[], $11::int[],
           $12::json[], $13::json[], $14::text[]) AS r(run_id)
         WHERE NOT EXISTS (SELECT 1 FROM baton_deleted_runs d WHERE d.run_id = r.run_id)
         ON CONFLICT (run_id) DO NOTHING
         RETURNING run_id`,
        columns(
          ids.map((id) => byId.get(id)!),
          [
            (r) => r.checkpoint.identity.runId,
            (r) => r.checkpoint.identity.tenantId,
            (r) => r.checkpoint.identity.agent,
            (r) => r.checkpoint.identity.threadId,
            (r) => r.checkpoint.status,
            (r) =>
              r.checkpoint.termination === null ? null : JSON.stringify(r.checkpoint.termination),
            (r) => r.checkpoint.createdAt,
            (r) => r.checkpoint.updatedAt,
            (r) => r.checkpoint.finishedAt,
            (r) => r.version,
            (r) => r.events.at(-1)?.seq ?? 0,
            (r) => JSON.stringify(r.checkpoint),
            (r) => JSON.stringify(r.threadState),
            // The effective key, as Redis's list compares it (migration 2).
            (r) => r.checkpoint.identity.fairnessKey ?? r.checkpoint.identity.tenantId,
          ],
        ),
      );
      // Only the runs this write inserted get their events and messages: a run already here
      // has all of its own (they went in with it, in one transaction).
      const fresh = rows.map((r) => byId.get(r.run_id)!);
      const events = fresh.flatMap((r) =>
        r.events.map((e) => ({ runId: r.checkpoint.identity.runId, e })),
      );
      if (events.length > 0)
        await client.query(
          `INSERT INTO baton_run_events (run_id, seq, event)
           SELECT * FROM unnest($1::text[], $2::int[], $3::json[])
           ON CONFLICT DO NOTHING`,
          columns(events, [(x) => x.runId, (x) => x.e.seq, (x) => JSON.stringify(x.e)]),
        );
      const messages = fresh.flatMap((r) =>
        !r.addsToThread
          ? []
          : ownMessages(r.checkpoint).map((m, idx) => ({ cp: r.checkpoint, m, idx })),
      );
      if (messages.length > 0)
        await client.query(
          `INSERT INTO baton_thread_messages (run_id, idx, tenant_id, thread_id, message)
           SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::json[])
           ON CONFLICT DO NOTHING`,
          columns(messages, [
            (x) => x.cp.identity.runId,
            (x) => x.idx,
            (x) => x.cp.identity.tenantId,
            (x) => x.cp.identity.threadId,
            (x) => JSON.stringify(x.m),
          ]),
        );
    });
  }

  async holds(runIds: readonly string[]): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    const rows = await this.query<{ run_id: string }>(
      'SELECT run_id FROM baton_runs WHERE run_id = ANY($1::text[])',
      [runIds],
    );
    return new Set(rows.map((r) => r.run_id));
  }

  async deleted(runIds: readonly string[]): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    const rows = await this.query<{ run_id: string }>(
      'SELECT run_id FROM baton_deleted_runs WHERE run_id = ANY($1::text[])',
      [runIds],
    );
    return new Set(rows.map((r) => r.run_id));
  }

  async loadRun(tenantId: string, runId: string): Promise<StoredCheckpoint | null> {
    const rows = await this.query<{ checkpoint: Checkpoint; version: number }>(
      'SELECT checkpoint, version FROM baton_runs WHERE run_id = $1 AND tenant_id = $2',
      [runId, tenantId],
    );
    const row = rows[0];
    return row ? { checkpoint: row.checkpoint, version: row.version } : null;
  }

  async lastSeq(tenantId: string, runId: string): Promise<number | null> {
    const rows = await this.query<{ last_seq: number }>(
      'SELECT last_seq FROM baton_runs WHERE run_id = $1 AND tenant_id = $2',
      [runId, tenantId],
    );
    return rows[0]?.last_seq ?? null;
  }

  async readEvents(
    tenantId: string,
    runId: string,
    afterSeq = 0,
    opts: { readonly known?: boolean } = {},
  ): Promise<RunEvent[] | null> {
    // A run the caller has just read (loadRun: this tenant's) needs no existence check; its
    // afterSeq is then bounded by what it read, which fits the column.
    const last = opts.known === true ? null : await this.lastSeq(tenantId, runId);
    if (last === null && opts.known !== true) return null;
    // Nothing after the end; and a client's seq past it (a tree cursor allows 15 digits) would
    // not fit the integer column.
    if (last !== null && afterSeq >= last) return [];
    const rows = await this.query<{ event: RunEvent }>(
      'SELECT event FROM baton_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq',
      [runId, Math.max(0, Math.floor(afterSeq))],
    );
    return rows.map((r) => r.event);
  }

  async listRuns(query: ArchiveListQuery): Promise<ArchivedRunSummary[]> {
    const where = ['tenant_id = $1'];
    const params: unknown[] = [query.tenantId];
    const add = (sql: string, value: unknown): void => {
      params.push(value);
      where.push(sql.replaceAll('?', `$${String(params.length)}`));
    };
    if (query.status !== undefined) add('status = ?', query.status);
    if (query.agent !== undefined) add('agent = ?', query.agent);
    if (query.threadId !== undefined) add('thread_id = ?', query.threadId);
    if (query.fairnessKey !== undefined) add('fairness_key = ?', query.fairnessKey);
    // No column of its own (no migration): read from the checkpoint, within the tenant's rows.
    if (query.agentVersion !== undefined) {
      // Not through add(): the pattern holds '?'.
      params.push(query.agentVersion);
      where.push(
        `substring(checkpoint::text from ${AGENT_VERSION_RE}) = $${String(params.length)}`,
      );
    }
    if (query.after) {
      add('created_at <= ?', query.after.createdAt);
      add('(created_at < $' + String(params.length) + ' OR run_id < ?)', query.after.runId);
    }
    params.push(Math.max(0, Math.floor(query.limit)));
    const rows = await this.query<SummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM baton_runs WHERE ${where.join(' AND ')}
       ORDER BY created_at DESC, run_id DESC LIMIT $${String(params.length)}`,
      params,
    );
    return rows.map(summaryOf);
  }

  async summaries(tenantId: string, runIds: readonly string[]): Promise<ArchivedRunSummary[]> {
    if (runIds.length === 0) return [];
    const rows = await this.query<SummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM baton_runs WHERE tenant_id = $1 AND run_id = ANY($2::text[])`,
      [tenantId, runIds],
    );
    return rows.map(summaryOf);
  }

  async loadThread(tenantId: string, threadId: string): Promise<ArchivedThread | null> {
    const runs = await this.query<{ run_id: string; thread_state: Record<string, JsonValue> }>(
      `SELECT run_id, thread_state FROM baton_runs WHERE tenant_id = $1 AND thread_id = $2
       ORDER BY finished_at, run_id`,
      [tenantId, threadId],
    );
    if (runs.length === 0) return null;
    const messages = await this.query<{ message: Message }>(
      `SELECT m.message FROM baton_thread_messages m JOIN baton_runs r USING (run_id)
       WHERE m.tenant_id = $1 AND m.thread_id = $2
       ORDER BY r.finished_at, r.run_id, m.idx`,
      [tenantId, threadId],
    );
    const created = await this.query<{ run_id: string; created_at: string }>(
      `SELECT run_id, created_at FROM baton_runs WHERE tenant_id = $1 AND thread_id = $2
       ORDER BY created_at, run_id`,
      [tenantId, threadId],
    );
    return {
      messages: messages.map((m) => m.message),
      state: runs.at(-1)!.thread_state,
      runIds: created.map((r) => r.run_id),
      runs: created.map((r) => ({ runId: r.run_id, createdAt: Number(r.created_at) })),
    };
  }

  async deleteRun(tenantId: string, runId: string): Promise<boolean> {
    return this.tx(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [runId]);
      const { rowCount } = await client.query(
        'DELETE FROM baton_runs WHERE run_id = $1 AND tenant_id = $2',
        [runId, tenantId],
      );
      // The tombstone whether or not the run was here yet: an archiver may hold it in memory.
      await client.query(
        'INSERT INTO baton_deleted_runs (run_id) VALUES ($1) ON CONFLICT DO NOTHING',
        [runId],
      );
      return (rowCount ?? 0) > 0;
    });
  }

  async deleteThread(tenantId: string, threadId: string): Promise<string[]> {
    const rows = await this.query<{ run_id: string }>(
      'SELECT run_id FROM baton_runs WHERE tenant_id = $1 AND thread_id = $2',
      [tenantId, threadId],
    );
    for (const { run_id } of rows) await this.deleteRun(tenantId, run_id);
    return rows.map((r) => r.run_id);
  }

  /** Rows and bytes of the archive's tables (the bench's per-run costs). */
  async usage(): Promise<{ runs: number; events: number; messages: number; bytes: number }> {
    const [row] = await this.query<{
      runs: number;
      events: number;
      messages: number;
      bytes: number;
    }>(
      `SELECT (SELECT count(*) FROM baton_runs)::float8 AS runs,
              (SELECT count(*) FROM baton_run_events)::float8 AS events,
              (SELECT count(*) FROM baton_thread_messages)::float8 AS messages,
              (pg_total_relation_size('baton_runs') + pg_total_relation_size('baton_run_events')
               + pg_total_relation_size('baton_thread_messages'))::float8 AS bytes`,
      [],
    );
    return row!;
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = null;
    if (pool) await (await pool.catch(() => null))?.end();
  }
}

/**
 * A checked-out client whose connection drops between two queries (a PostgreSQL restart, a
 * terminated backend) emits 'error' on itself, not on the pool: without a listener that would end
 * the process. The query in flight, or the next one, fails anyway, which is where it is handled.
 */
function guarded(client: PoolClient): PoolClient {
  if (client.listenerCount('error') === 0) client.on('error', () => undefined);
  return client;
}

function summaryOf(r: SummaryRow): ArchivedRunSummary {
  return {
    runId: r.run_id,
    tenantId: r.tenant_id,
    agent: r.agent,
    threadId: r.thread_id,
    status: r.status as RunStatus,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.agent_version === null ? {} : { agentVersion: r.agent_version }),
  };
}

/** The messages a run added to its thread (what its release appended there). */
function ownMessages(cp: Checkpoint): Message[] {
  return cp.messages.slice(cp.historyLength);
}

/** Row objects to one array per column (for INSERT … SELECT FROM unnest(…)). */
function columns<T>(rows: readonly T[], getters: readonly ((row: T) => unknown)[]): unknown[][] {
  return getters.map((get) => rows.map(get));
}
