import {
  DEFAULT_PRIORITY,
  type QueuedInfo,
  type QueuedReason,
  type RunIdentity,
  type StepJob,
} from '@baton/protocol';
import type { Logger } from 'pino';
import { AgentLiveness } from '../agent-liveness.ts';
import type { BatonQueues, StepTarget } from '../queues.ts';
import type { BatonKeys, FairTenantKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';
import type { RunMeta } from '../run-record/checkpoint-codec.ts';
import { admissionScripts, type AdmissionScripts } from './admission-scripts.ts';
import type { FairnessPolicy } from './fairness-config.ts';

/** A run as admission sees it: who it is fair to, and where its jobs go. */
export type AdmissionTarget = StepTarget & Pick<RunIdentity, 'priority' | 'fairnessKey' | 'parent'>;

/** One fairness key's numbers, or a tenant's (key "*") (GET /metrics). */
export interface FairnessKeyStats {
  readonly tenantId: string;
  /** A tracked key (FairnessPolicy.tracked), or "*": the tenant, all its keys together. */
  readonly key: string;
  readonly backlog: number;
  readonly inProgress: number;
  /** Null: the key has no window (only the tenant's limit holds it back); "*": no tenant limit. */
  readonly limit: number | null;
  readonly weight: number;
  /** Runs admitted since the state was created (a counter: rate() of it is the dispatch share). */
  readonly dispatched: number;
}

const REASONS: Record<1 | 2 | 3, QueuedReason> = {
  1: 'fairness_key_limit',
  2: 'tenant_limit',
  3: 'behind_backlog',
};

/**
 * How long an agent's liveness (whether any worker advertises it) is trusted. Stale "served" only
 * lets a run take a slot the sweep gives back; stale "unserved" lets a run skip its window once.
 */
const LIVENESS_TTL_MS = 2_000;

/** Keys one fill script chooses among (the ones furthest below their share, as last read). */
const FILL_CANDIDATES = 16;

/** Orders a key's backlog: priority first, then arrival (ms since 1970 stay below 1e13). */
const PRIORITY_SCALE = 1e13;

/** The fairness key of a run: its own, else its tenant (keys are per tenant, never shared). */
export function fairnessKeyOf(run: Pick<RunIdentity, 'fairnessKey' | 'tenantId'>): string {
  return run.fairnessKey ?? run.tenantId;
}

export interface RunAdmissionDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly queues: BatonQueues;
  readonly policy: FairnessPolicy;
  readonly meta: (runId: string) => Promise<RunMeta | null>;
  /**
   * Whether an active run waits on a descendant waiting for a human (tree-waits.ts): the sweep
   * gives such a run's slot back. Absent: the sweep cannot tell.
   */
  readonly treeWaits?: (tenantId: string, runId: string) => Promise<boolean>;
  readonly now: () => number;
  readonly logger: Logger;
}

/**
 * Admission control per tenant and fairness key (docs/fairness.md). A top-level run gets its
 * first step job only once it holds a slot: at most `window × weight` runs of a key (and the
 * tenant's maxRuns) are in progress, the rest wait in the key's backlog holding no job. A run
 * gives its slot back when it finishes or starts waiting for a human, and the backlog's head
 * takes it. With every key saturated the queue holds about one job per admitted run, so the
 * keys' shares of the workers follow their windows (Little's law), and a key's next step waits
 * behind at most the sum of the windows, never behind another key's backlog.
 *
 * Slots belong to runs, not workers: a worker that dies holding a run's job loses no place (the
 * job is retried, the run keeps its slot); a slot whose run finished without giving it back is
 * returned by the reconciler's sweep.
 *
 * Child runs (agent-as-tool) are never held back: their parent holds a slot and waits on them,
 * so holding them back could deadlock a key. They carry its priority and key all the same.
 *
 * Runs of an agent no live worker advertises (`AgentLiveness`) hold no slot either: they get
 * their job at once and wait in their agent's queue, where they block nobody, instead of holding
 * their key's slots until a worker of that agent comes (forever for an agent nobody serves). The
 * sweep gives back the slot of an admitted run whose agent lost its last worker (its job stays
 * queued). Both are stateless, so a crash anywhere leaves nothing to repair: a run without a slot
 * only releases nothing when it ends.
 */
export class RunAdmission {
  private readonly deps: RunAdmissionDeps;
  private readonly scripts: AdmissionScripts;
  /** Tenants this process has listed in the tenant set (once per process). */
  private readonly listed = new Set<string>();
  private rotation = 0;
  private readonly liveness: AgentLiveness;
  private readonly served = new Map<string, { slots: number; at: number; live: boolean }>();
  /** Where forgetUntracked's scan of each tenant's dispatch counters resumes. */
  private readonly dispatchedCursors = new Map<string, string>();

  constructor(deps: RunAdmissionDeps) {
    this.deps = deps;
    this.scripts = admissionScripts(deps.redis);
    this.liveness = new AgentLiveness(deps.redis, deps.keys);
  }

  /**
   * Whether a live worker serves the run's version (AgentVersions, cached), or for a run
   * without one its agent (cached for LIVENESS_TTL_MS). A run whose version nobody serves gets
   * no slot: enqueueStep parks it (`version_unavailable`) until a worker of it starts.
   */
  private async isServed(agent: string, agentVersion?: string): Promise<boolean> {
    if (agentVersion !== undefined) {
      const route = await this.deps.queues.versions.route(agent, agentVersion);
      if (route !== null) return route.live;
    }
    return (await this.pool(agent)).live;
  }

  /**
   * The agent's live workers (all its versions): whether there is any, and their step slots
   * together (0 when they advertise none: a release before borrowing). Cached for
   * LIVENESS_TTL_MS: one read of the slots per agent per period, not per run.
   */
  private async pool(agent: string): Promise<{ live: boolean; slots: number }> {
    const now = Date.now();
    const cached = this.served.get(agent);
    if (cached && now - cached.at < LIVENESS_TTL_MS) return cached;
    const workers = (await this.liveness.workers([agent])).get(agent) ?? [];
    const entry = {
      live: workers.length > 0,
      slots: await this.liveness.stepSlots(workers),
      at: now,
    };
    this.served.set(agent, entry);
    return entry;
  }

  /**
   * How many runs of the tenant may be in progress, borrowed ones included, when one key alone
   * waits (docs/fairness.md, "Borrowing"): the agent's live step slots less one window, so that
   * another key's window of runs still finds free slots beside a lone key's borrowed runs. -1:
   * no borrowing (not allowed here, or the pool advertises no slots).
   */
  private async borrowLimit(
    agent: string,
    limits: { keyLimit: number; tenantLimit: number; borrowable: boolean },
  ): Promise<number> {
    const headroom = Math.min(limits.keyLimit, limits.tenantLimit);
    if (!limits.borrowable || !Number.isFinite(headroom)) return -1;
    const { slots } = await this.pool(agent);
    return slots > 0 ? Math.max(0, slots - headroom) : -1;
  }

  get enabled(): boolean {
    return this.deps.policy.enabled;
  }

  private tenantKeys(tenantId: string): FairTenantKeys {
    return this.deps.keys.fairTenant(tenantId);
  }

  /** Every tenant that ever had fairness state (the sweep and /metrics walk them). */
  private get tenantsKey(): string {
    return this.deps.keys.fairTenants;
  }

  private async list(tenantId: string): Promise<void> {
    if (this.listed.has(tenantId)) return;
    await this.deps.redis.sadd(this.tenantsKey, tenantId);
    this.listed.add(tenantId);
  }

  /**
   * The run has work and needs a job (created, promoted on its thread, resumed by a decision):
   * it gets one now if it holds or gets a slot, else it waits in its key's backlog (null: it
   * got its job). Idempotent: asking again keeps a parked run's place.
   */
  async request(
    run: AdmissionTarget,
    reason: StepJob['reason'],
    version: number,
  ): Promise<QueuedInfo | null> {
    if (
      !this.enabled ||
      run.parent !== undefined ||
      !(await this.isServed(run.agent, run.agentVersion))
    ) {
      await this.deps.queues.enqueueStep(run, reason, version);
      return null;
    }
    await this.list(run.tenantId);
    const key = fairnessKeyOf(run);
    const k = this.tenantKeys(run.tenantId);
    const limits = this.deps.policy.limits(run.tenantId, key);
    const { keyLimit, tenantLimit } = limits;
    const score = (run.priority ?? DEFAULT_PRIORITY) * PRIORITY_SCALE + this.deps.now();
    const reply = await this.scripts.admit(
      [k.where, k.busy, k.queue(key), k.keys, k.dispatched, k.borrow],
      [
        run.runId,
        key,
        score,
        finite(keyLimit),
        finite(tenantLimit),
        this.trackedFlag(run.tenantId, key),
        await this.borrowLimit(run.agent, limits),
      ],
    );
    if (reply[0] === 1 || reply[0] === 2) {
      await this.deps.queues.enqueueStep(run, reason, version);
      return null;
    }
    const [, why, position, backlog, inProgress] = reply;
    return { reason: REASONS[why], position, backlog, inProgress, ...limitOf(keyLimit) };
  }

  /**
   * The run no longer counts (finished, cancelled, waiting for a human): its slot goes to the
   * next runs of the tenant's backlogs, or it leaves its backlog. Idempotent.
   */
  async release(run: Pick<RunIdentity, 'runId' | 'tenantId' | 'fairnessKey'>): Promise<void> {
    if (!this.enabled) return;
    const key = fairnessKeyOf(run);
    const k = this.tenantKeys(run.tenantId);
    const released = await this.scripts.release(
      [k.where, k.busy, k.queue(key), k.keys, k.borrow],
      [run.runId, key],
    );
    // A borrowed run's end frees no window, but room to borrow into for the key's backlog.
    if (released === 1 || released === 3) await this.fill(run.tenantId);
  }

  /**
   * Admits what the tenant's limits allow from its keys' backlogs, and gives each admitted run
   * its job. Keys are visited fewest runs in progress per weight first (ties from a rotating
   * start): under the tenant's limit a freed slot goes to the key furthest below its weighted
   * share, so weights still set the keys' shares when the tenant's limit binds before their
   * windows do, and a key that floods does not keep its tenant's other keys waiting. Once the
   * tenant's limit is reached no other key is visited (a tenant with thousands of backlogged keys
   * costs one script per admitted run, not one per key).
   */
  async fill(tenantId: string): Promise<number> {
    const k = this.tenantKeys(tenantId);
    const backlogged = await this.deps.redis.smembers(k.keys);
    if (backlogged.length === 0) return 0;
    const busy = await this.deps.redis.hmget(k.busy, ...backlogged);
    this.rotation = (this.rotation + 1) % backlogged.length;
    const n = backlogged.length;
    const candidates = backlogged.map((key, i) => ({
      key,
      busy: Number(busy[i] ?? 0),
      ...this.deps.policy.limits(tenantId, key),
      turn: (i - this.rotation + n) % n,
    }));
    const before = (a: (typeof candidates)[number], b: (typeof candidates)[number]) =>
      a.busy / a.weight - b.busy / b.weight || a.turn - b.turn;
    let admitted = 0;
    // One run at a time, so several free slots (concurrent releases, a sweep) are spread by
    // weight. The script picks among the FILL_CANDIDATES keys that look furthest below their
    // share here, by their counts at that instant (concurrent fills read stale ones here).
    while (candidates.length > 0) {
      candidates.sort(before);
      const batch = candidates.slice(0, FILL_CANDIDATES);
      const reply = await this.scripts.fill(
        [k.where, k.busy, k.keys, k.dispatched, k.borrow, ...batch.map((c) => k.queue(c.key))],
        [
          finite(batch[0]!.tenantLimit),
          ...batch.flatMap((c) => [
            c.key,
            c.weight,
            finite(c.keyLimit),
            this.trackedFlag(tenantId, c.key),
          ]),
        ],
      );
      if (reply[0] === 1) break;
      if (reply.length === 1) {
        // None of these can take a run now: at their windows, or their backlogs are empty.
        candidates.splice(0, batch.length);
        continue;
      }
      const [, index, runId] = reply;
      const chosen = batch[index - 1]!;
      chosen.busy += 1;
      if (await this.dispatch(tenantId, chosen.key, runId)) admitted += 1;
    }
    return admitted;
  }

  /**
   * The run waits for a human: its slot goes back. A child run holds none; the slot its tree
   * holds is its root's, which waits on it, so the root's goes back (else a tenant whose trees
   * wait for approvals deep down holds its key's window and parks its other runs until someone
   * answers). The root then runs to its end without a slot: it has its jobs already (its child's
   * end enqueues its next step), and parking a run mid-tree could deadlock.
   */
  async waitingForHuman(run: Pick<RunIdentity, 'runId' | 'tenantId' | 'fairnessKey' | 'parent'>) {
    await this.release(
      run.parent === undefined
        ? run
        : { runId: run.parent.rootRunId, tenantId: run.tenantId, fairnessKey: run.fairnessKey },
    );
  }

  private trackedFlag(tenantId: string, key: string): 0 | 1 {
    return this.deps.policy.tracked(tenantId, key) ? 1 : 0;
  }

  /** Gives an admitted run its job; one that ended meanwhile gives its slot back. */
  private async dispatch(tenantId: string, key: string, runId: string): Promise<boolean> {
    const meta = await this.deps.meta(runId);
    if (!meta || meta.status === 'done' || meta.tenantId !== tenantId) {
      await this.release({ runId, tenantId, fairnessKey: key });
      return false;
    }
    await this.deps.queues.enqueueStep(
      { runId, tenantId, agent: meta.agent, agentVersion: meta.agentVersion, ...priorityOf(meta) },
      meta.status === 'created' ? 'start' : 'continue',
      meta.version,
    );
    return true;
  }

  /** Whether the run waits in a backlog (it holds no job and must not be given one). */
  async isParked(tenantId: string, runId: string): Promise<boolean> {
    if (!this.enabled) return false;
    const st = await this.deps.redis.hget(this.tenantKeys(tenantId).where, runId);
    return st?.startsWith('p\t') ?? false;
  }

  /** Why the run waits and where it stands; null when it is not waiting for a slot. */
  async queued(
    run: Pick<RunIdentity, 'runId' | 'tenantId' | 'fairnessKey'>,
  ): Promise<QueuedInfo | null> {
    if (!this.enabled) return null;
    const key = fairnessKeyOf(run);
    const k = this.tenantKeys(run.tenantId);
    const st = await this.deps.redis.hget(k.where, run.runId);
    if (!st?.startsWith('p\t')) return null;
    const [rank, backlog, busy] = await Promise.all([
      this.deps.redis.zrank(k.queue(key), run.runId),
      this.deps.redis.zcard(k.queue(key)),
      this.deps.redis.hmget(k.busy, key, '*'),
    ]);
    if (rank === null) return null;
    const { keyLimit, tenantLimit } = this.deps.policy.limits(run.tenantId, key);
    const inProgress = Number(busy[0] ?? 0);
    const reason: QueuedReason =
      inProgress >= keyLimit
        ? 'fairness_key_limit'
        : Number(busy[1] ?? 0) >= tenantLimit
          ? 'tenant_limit'
          : 'behind_backlog';
    return { reason, position: rank + 1, backlog, inProgress, ...limitOf(keyLimit) };
  }

  /**
   * queued() for a page of one tenant's runs (GET /v1/runs): one HMGET of the tenant's `:where`
   * for the whole page, then the three reads of queued() only for the runs that wait in a
   * backlog (a page of done or admitted runs costs one command).
   */
  async queuedMany(
    tenantId: string,
    runs: readonly Pick<RunIdentity, 'runId' | 'fairnessKey'>[],
  ): Promise<Map<string, QueuedInfo>> {
    const out = new Map<string, QueuedInfo>();
    if (!this.enabled || runs.length === 0) return out;
    const states = await this.deps.redis.hmget(
      this.tenantKeys(tenantId).where,
      ...runs.map((r) => r.runId),
    );
    const parked = runs.filter((_, i) => states[i]?.startsWith('p\t') ?? false);
    await Promise.all(
      parked.map(async (r) => {
        const info = await this.queued({ ...r, tenantId });
        if (info) out.set(r.runId, info);
      }),
    );
    return out;
  }

  /**
   * The ids of the tenant's runs waiting in a backlog (`GET /v1/runs?admission=queued`). Its
   * `:where` holds only runs in progress or waiting for a slot, so the scan is bounded by those,
   * never by the tenant's history.
   */
  async parkedRuns(tenantId: string): Promise<Set<string>> {
    const parked = new Set<string>();
    if (!this.enabled) return parked;
    const where = this.tenantKeys(tenantId).where;
    let cursor = '0';
    do {
      const [next, flat] = await this.deps.redis.hscan(where, cursor, 'COUNT', 500);
      cursor = next;
      for (let i = 0; i + 1 < flat.length; i += 2)
        if ((flat[i + 1] as string).startsWith('p\t')) parked.add(flat[i] as string);
    } while (cursor !== '0');
    return parked;
  }

  /**
   * Leak safety (the reconciler, each scan): slots and backlog places whose run finished, is
   * gone, or waits for a human, directly or through a descendant (its tree holds no slot then;
   * a crash between the child's waiting commit and the root's release would otherwise leave the
   * root's slot held until the tree ends), are given back, and so are the slots of runs whose
   * agent has no live worker any more (their job waits in the agent's queue without one); then
   * each tenant's backlogs are admitted from (a release that crashed before its fill admitted
   * nobody). Bounded: `batch` entries per tenant per call, resumed where the last call stopped.
   */
  async sweep(batch: number): Promise<{ released: number; admitted: number }> {
    if (!this.enabled) return { released: 0, admitted: 0 };
    const { redis } = this.deps;
    const cursors = this.deps.keys.fairSweepCursor;
    let released = 0;
    let admitted = 0;
    for (const tenantId of await redis.smembers(this.tenantsKey)) {
      const k = this.tenantKeys(tenantId);
      const [next, flat] = await redis.hscan(
        k.where,
        (await redis.hget(cursors, tenantId)) ?? '0',
        'COUNT',
        batch,
      );
      await redis.hset(cursors, tenantId, next);
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const runId = flat[i] as string;
        const st = flat[i + 1] as string;
        const meta = await this.deps.meta(runId);
        const admittedRun = st.startsWith('a\t') || st.startsWith('b\t');
        const gone = !meta || meta.status === 'done';
        const idle =
          admittedRun &&
          !gone &&
          (meta.activity === 'waiting' ||
            !(await this.isServed(meta.agent, meta.agentVersion)) ||
            (meta.activity === 'active' &&
              ((await this.deps.treeWaits?.(tenantId, runId)) ?? false)));
        if (gone || idle) {
          await this.release({ runId, tenantId, fairnessKey: st.slice(2) });
          released += 1;
        }
      }
      admitted += await this.fill(tenantId);
      await this.forgetUntracked(tenantId, batch);
    }
    return { released, admitted };
  }

  /**
   * Deletes the per-key dispatch counters of keys that are not tracked: the release before
   * this one kept one for every key ever used (and does while it runs beside this one), and
   * nothing else ever deletes them. `batch` fields per tenant per sweep, resumed where it stopped.
   */
  private async forgetUntracked(tenantId: string, batch: number): Promise<void> {
    const { redis, policy } = this.deps;
    const k = this.tenantKeys(tenantId);
    const [next, fields] = await redis.hscan(
      k.dispatched,
      this.dispatchedCursors.get(tenantId) ?? '0',
      'COUNT',
      batch,
    );
    this.dispatchedCursors.set(tenantId, next);
    const stale = fields.filter(
      (field, i) => i % 2 === 0 && field !== '*' && !policy.tracked(tenantId, field),
    );
    if (stale.length > 0) await redis.hdel(k.dispatched, ...stale);
  }

  /**
   * Each tenant with fairness state: its total (key "*": every key's runs, the tenant's limit)
   * and its tracked keys that have any (GET /metrics). Keys a tenant invents are in the total
   * only: the rows, like the series they become, are as many as the operator's configuration
   * makes them, whatever keys the tenants send. A scrape costs a few commands per tenant.
   */
  async stats(): Promise<FairnessKeyStats[]> {
    if (!this.enabled) return [];
    const { redis, policy } = this.deps;
    const rows: FairnessKeyStats[] = [];
    for (const tenantId of (await redis.smembers(this.tenantsKey)).sort()) {
      const k = this.tenantKeys(tenantId);
      const keys = [tenantId, ...policy.namedKeys(tenantId)].sort();
      const [busy, dispatched, runs, backlogs, borrowed] = await Promise.all([
        redis.hmget(k.busy, '*', ...keys),
        redis.hmget(k.dispatched, '*', ...keys),
        redis.hlen(k.where),
        Promise.all(keys.map((key) => redis.zcard(k.queue(key)))),
        redis.hget(k.borrow, 'runs'),
      ]);
      // Borrowed runs are in progress too, though no window counts them.
      const inProgress = Number(busy[0] ?? 0) + Number(borrowed ?? 0);
      const { tenantLimit } = policy.limits(tenantId, tenantId);
      rows.push({
        tenantId,
        key: '*',
        // `where` holds the tenant's admitted and parked runs; `busy` counts the admitted.
        backlog: Math.max(0, runs - inProgress),
        inProgress,
        limit: Number.isFinite(tenantLimit) ? tenantLimit : null,
        weight: 1,
        dispatched: Number(dispatched[0] ?? 0),
      });
      keys.forEach((key, i) => {
        const row = {
          backlog: backlogs[i] ?? 0,
          inProgress: Number(busy[i + 1] ?? 0),
          dispatched: Number(dispatched[i + 1] ?? 0),
        };
        if (row.backlog === 0 && row.inProgress === 0 && row.dispatched === 0) return;
        const { keyLimit, weight } = policy.limits(tenantId, key);
        rows.push({
          tenantId,
          key,
          ...row,
          limit: Number.isFinite(keyLimit) ? keyLimit : null,
          weight,
        });
      });
    }
    return rows;
  }
}

/** A key without a window reports none. */
function limitOf(keyLimit: number): { limit?: number } {
  return Number.isFinite(keyLimit) ? { limit: keyLimit } : {};
}

/** The scripts take -1 for "no limit". */
function finite(limit: number): number {
  return Number.isFinite(limit) ? limit : -1;
}

/** The run's priority as an enqueue target carries it (absent: the default). */
function priorityOf(meta: Pick<RunMeta, 'priority'>): { priority?: number } {
  return meta.priority === undefined ? {} : { priority: meta.priority };
}
