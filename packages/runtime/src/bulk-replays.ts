import { createHash } from 'node:crypto';
import { isBatonError } from '@baton/core';
import type { BulkReplayFilter, BulkReplayStatus, Checkpoint } from '@baton/protocol';
import { BatonError } from '@baton/protocol';
import { defineScript, type LuaScript } from './redis/scripts.ts';
import type { RunForks } from './run-forks.ts';
import type { RunParts } from './run-service-deps.ts';

/** Runs replayed between two progress writes. */
const BATCH = 25;
/** A running operation whose record has not moved for this long lost its processor. */
const STALE_MS = 30_000;
/** Records are kept this long after their last write. */
const TTL_SECONDS = 7 * 86_400;

interface BulkReplayRecord extends BulkReplayStatus {
  /** The selected original runs, newest first; `processed` says how many were handled. */
  readonly selected: readonly string[];
  /** Bumped by every write (compare-and-set), so two processors never both write. */
  readonly version: number;
}

/** SET the record only if its version is still the one read (ARGV[1]); 1 written, 0 not. */
const CAS_LUA = `
local cur = redis.call('GET', KEYS[1])
if cur and cjson.decode(cur).version ~= tonumber(ARGV[1]) then return 0 end
if (not cur) and tonumber(ARGV[1]) ~= 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
`;

/** The version a run was created on, when it records one (agent versions land separately). */
function versionOf(
  cp: Pick<Checkpoint, 'origin'> & { readonly agentVersion?: string },
): string | undefined {
  return cp.agentVersion ?? cp.origin?.agentVersion;
}

function derivedId(replayId: string, runId: string, what: string): string {
  return `rp-${createHash('sha256').update(`${replayId}\n${runId}\n${what}`).digest('hex').slice(0, 32)}`;
}

function publicStatus(r: BulkReplayRecord): BulkReplayStatus {
  const { selected: _s, version: _v, ...status } = r;
  return status;
}

/**
 * Bulk replay (POST /v1/runs/replay): the runs a filter selects are replayed in batches by the
 * API that accepted the operation, with progress in one Redis record. Each replay's ids derive
 * from the operation and the original, so a batch handled twice (its processor died after
 * replaying and before recording) creates no second replay; a GET that finds the operation
 * running with a record older than STALE_MS takes it over.
 */
export class BulkReplays {
  private readonly p: RunParts;
  private readonly forks: RunForks;
  private readonly cas: LuaScript<
    [key: string],
    [version: number, json: string, ttl: number],
    number
  >;

  constructor(parts: RunParts, forks: RunForks) {
    this.p = parts;
    this.forks = forks;
    this.cas = defineScript(parts.deps.redis, 'batonBulkReplayCas', 1, CAS_LUA);
  }

  async start(tenantId: string, filter: BulkReplayFilter): Promise<BulkReplayStatus> {
    const selected = await this.select(tenantId, filter);
    const now = this.p.deps.clock.now();
    const record: BulkReplayRecord = {
      replayId: this.p.ids(),
      state: selected.length === 0 ? 'done' : 'running',
      total: selected.length,
      processed: 0,
      replayed: 0,
      skipped: 0,
      failed: 0,
      replays: {},
      createdAt: now,
      updatedAt: now,
      selected,
      version: 0,
    };
    const written = await this.write(tenantId, record, 0);
    if (written.state === 'running') this.carryOn(tenantId, written);
    return publicStatus(written);
  }

  async status(tenantId: string, replayId: string): Promise<BulkReplayStatus> {
    const record = await this.read(tenantId, replayId);
    if (!record) throw new BatonError('not_found', `bulk replay ${replayId} was not found`);
    if (record.state === 'running' && this.p.deps.clock.now() - record.updatedAt > STALE_MS) {
      // Its processor is gone: this API carries on from the last recorded batch.
      const claimed = await this.write(tenantId, record, record.version).catch(() => null);
      if (claimed) this.carryOn(tenantId, claimed);
    }
    return publicStatus(record);
  }

  /**
   * Processes in the background. A failure (Redis gone, the API closing) stops it where its
   * record says; the next GET of the operation after STALE_MS carries it on.
   */
  private carryOn(tenantId: string, record: BulkReplayRecord): void {
    this.process(tenantId, record).catch(() => undefined);
  }

  /** The runs the filter selects, newest first, at most filter.limit. */
  private async select(tenantId: string, filter: BulkReplayFilter): Promise<string[]> {
    const out: string[] = [];
    const wanted = new Set<string>(
      filter.status.map((s) => (s === 'failed' ? 'error' : 'cancelled')),
    );
    let cursor: string | null = null;
    for (;;) {
      const page = await this.p.reads.listRuns({
        tenantId,
        status: 'done',
        ...(filter.agent === undefined ? {} : { agent: filter.agent }),
        cursor,
        limit: 100,
      });
      for (const run of page.runs) {
        if (filter.createdBefore !== undefined && run.createdAt > filter.createdBefore) continue;
        if (filter.createdAfter !== undefined && run.createdAt < filter.createdAfter) return out;
        const loaded = await this.p.reads.loadFrom(tenantId, run.runId);
        const cp = loaded?.loaded.checkpoint;
        if (!cp || !wanted.has(cp.termination?.kind ?? '')) continue;
        if (filter.agentVersion !== undefined && versionOf(cp) !== filter.agentVersion) continue;
        out.push(run.runId);
        if (out.length >= filter.limit) return out;
      }
      cursor = page.nextCursor;
      if (cursor === null) return out;
    }
  }

  private async process(tenantId: string, start: BulkReplayRecord): Promise<void> {
    let record = start;
    while (record.processed < record.selected.length) {
      const batch = record.selected.slice(record.processed, record.processed + BATCH);
      const replays: Record<string, string> = { ...record.replays };
      let { replayed, skipped, failed } = record;
      await Promise.all(
        batch.map(async (runId) => {
          try {
            const r = await this.forks.replay(tenantId, runId, {
              runId: derivedId(record.replayId, runId, 'run'),
              threadId: derivedId(record.replayId, runId, 'thread'),
            });
            replays[runId] = r.runId;
            replayed += 1;
          } catch (error) {
            if (isBatonError(error, 'run_not_replayable', 'run_not_found')) skipped += 1;
            else failed += 1;
          }
        }),
      );
      const processed = record.processed + batch.length;
      const next: BulkReplayRecord = {
        ...record,
        processed,
        replayed,
        skipped,
        failed,
        replays,
        state: processed >= record.selected.length ? 'done' : 'running',
        updatedAt: this.p.deps.clock.now(),
      };
      // Another API took the operation over (this one was stalled): it carries on, not us.
      const written = await this.write(tenantId, next, record.version).catch(() => null);
      if (!written) return;
      record = written;
    }
  }

  private async read(tenantId: string, replayId: string): Promise<BulkReplayRecord | null> {
    const raw = await this.p.deps.redis.get(this.p.deps.keys.bulkReplay(tenantId, replayId));
    return raw === null ? null : (JSON.parse(raw) as BulkReplayRecord);
  }

  /** Writes `record` over the version read; throws when another writer came first. */
  private async write(
    tenantId: string,
    record: BulkReplayRecord,
    expected: number,
  ): Promise<BulkReplayRecord> {
    const next = { ...record, version: expected + 1, updatedAt: this.p.deps.clock.now() };
    const ok = await this.cas(
      [this.p.deps.keys.bulkReplay(tenantId, record.replayId)],
      [expected, JSON.stringify(next), TTL_SECONDS],
    );
    if (ok !== 1) throw new BatonError('conflict', `bulk replay ${record.replayId} moved on`);
    return next;
  }
}
