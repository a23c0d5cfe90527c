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
import { keyPart, type BatonKeys } from '../redis/keys.ts';
import type { RedisClient } from '../redis/scripts.ts';
import type { RunMeta } from '../run-record/checkpoint-codec.ts';
import { admissionScripts, type AdmissionScripts } from './admission-scripts.ts';
import type { FairnessPolicy } from './fairness-config.ts';

/** A run as admission sees it: who it is fair to, and where its jobs go. */
export type AdmissionTarget = StepTarget & Pick<RunIdentity, 'priority' | 'fairnessKey' | 'parent'>;

/** Fairness state of one tenant (one hash tag: each script's keys share one slot). */
interface TenantKeys {
  readonly where: string;
  readonly busy: string;
  readonly keys: string;
  readonly dispatched: string;
  queue(key: string): string;
}

/** One fairness key's numbers (GET /metrics). */
export interface FairnessKeyStats {
  readonly tenantId: string;
  readonly key: string;
  readonly backlog: number;
  readonly inProgress: number;
  /** Null: the key has no window (only the tenant's limit holds it back). */
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
  private readonly served = new Map<string, { live: boolean; at: number }>();

  constructor(deps: RunAdmissionDeps) {
    this.deps = deps;
    this.scripts = admissionScripts(deps.redis);
    this.liveness = new AgentLiveness(deps.redis, deps.keys);
  }

  /** Whether a live worker advertises the agent (cached for LIVENESS_TTL_MS). */
  private async isServed(agent: string): Promise<boolean> {
    const now = Date.now();
    const cached = this.served.get(agent);
    if (cached && now - cached.at < LIVENESS_TTL_MS) return cached.live;
    const live = ((await this.liveness.workers([agent])).get(agent) ?? []).length > 0;
    this.served.set(agent, { live, at: now });
    return live;
  }

  get enabled(): boolean {
    return this.deps.policy.enabled;
  }

  private tenantKeys(tenantId: string): TenantKeys {
    const base = `${this.deps.keys.prefix}:{fair:${keyPart(tenantId)}}`;
    return {
      where: `${base}:where`,
      busy: `${base}:busy`,
      keys: `${base}:keys`,
      dispatched: `${base}:dispatched`,
      queue: (key) => `${base}:q:${keyPart(key)}`,
    };
  }

  /** Every tenant that ever had fairness state (the sweep and /metrics walk them). */
  private get tenantsKey(): string {
    return `${this.deps.keys.prefix}:fair:tenants`;
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
    if (!this.enabled || run.parent !== undefined || !(await this.isServed(run.agent))) {
      await this.deps.queues.enqueueStep(run, reason, version);
      return null;
    }
    await this.list(run.tenantId);
    const key = fairnessKeyOf(run);
    const k = this.tenantKeys(run.tenantId);
    const { keyLimit, tenantLimit } = this.deps.policy.limits(run.tenantId, key);
    const score = (run.priority ?? DEFAULT_PRIORITY) * PRIORITY_SCALE + this.deps.now();
    const reply = await this.scripts.admit(
      [k.where, k.busy, k.queue(key), k.keys, k.dispatched],
      [run.runId, key, score, finite(keyLimit), finite(tenantLimit)],
    );
    if (reply[0] === 1) {
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
      [k.where, k.busy, k.queue(key), k.keys],
      [run.runId, key],
    );
    if (released === 1) await this.fill(run.tenantId);
  }

  /**
   * Admits what the tenant's limits allow from its keys' backlogs, and gives each admitted run
   * its job. The keys are visited from a rotating start, so under the tenant's limit no key
   * always comes first.
   */
  async fill(tenantId: string): Promise<number> {
    const k = this.tenantKeys(tenantId);
    const backlogged = await this.deps.redis.smembers(k.keys);
    if (backlogged.length === 0) return 0;
    this.rotation = (this.rotation + 1) % backlogged.length;
    const order = [...backlogged.slice(this.rotation), ...backlogged.slice(0, this.rotation)];
    let admitted = 0;
    for (const key of order) {
      const { keyLimit, tenantLimit } = this.deps.policy.limits(tenantId, key);
      const runs = await this.scripts.fill(
        [k.where, k.busy, k.queue(key), k.keys, k.dispatched],
        [key, finite(keyLimit), finite(tenantLimit), Number.isFinite(keyLimit) ? keyLimit : 1000],
      );
      for (const runId of runs) if (await this.dispatch(tenantId, key, runId)) admitted += 1;
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

  /** Gives an admitted run its job; one that ended meanwhile gives its slot back. */
  private async dispatch(tenantId: string, key: string, runId: string): Promise<boolean> {
    const meta = await this.deps.meta(runId);
    if (!meta || meta.status === 'done' || meta.tenantId !== tenantId) {
      await this.release({ runId, tenantId, fairnessKey: key });
      return false;
    }
    await this.deps.queues.enqueueStep(
      { runId, tenantId, agent: meta.agent, ...priorityOf(meta) },
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
   * Leak safety (the reconciler, each scan): slots and backlog places whose run finished, is
   * gone, or waits for a human are given back, and so are the slots of runs whose agent has no
   * live worker any more (their job waits in the agent's queue without one), then each tenant's backlogs are admitted from (a
   * release that crashed before its fill admitted nobody). Bounded: `batch` entries per tenant
   * per call, resumed where the last call stopped.
   */
  async sweep(batch: number): Promise<{ released: number; admitted: number }> {
    if (!this.enabled) return { released: 0, admitted: 0 };
    const { redis } = this.deps;
    const cursors = `${this.deps.keys.prefix}:fair:sweep-cursor`;
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
        const admittedRun = st.startsWith('a\t');
        const gone = !meta || meta.status === 'done';
        const idle =
          admittedRun &&
          !gone &&
          (meta.activity === 'waiting' || !(await this.isServed(meta.agent)));
        if (gone || idle) {
          await this.release({ runId, tenantId, fairnessKey: st.slice(2) });
          released += 1;
        }
      }
      admitted += await this.fill(tenantId);
    }
    return { released, admitted };
  }

  /** Every key of every tenant with fairness state (GET /metrics). */
  async stats(): Promise<FairnessKeyStats[]> {
    if (!this.enabled) return [];
    const { redis } = this.deps;
    const rows: FairnessKeyStats[] = [];
    for (const tenantId of (await redis.smembers(this.tenantsKey)).sort()) {
      const k = this.tenantKeys(tenantId);
      const [busy, dispatched, backlogged] = await Promise.all([
        redis.hgetall(k.busy),
        redis.hgetall(k.dispatched),
        redis.smembers(k.keys),
      ]);
      const keys = new Set([...Object.keys(dispatched), ...backlogged]);
      for (const key of [...keys].sort()) {
        const { keyLimit, weight } = this.deps.policy.limits(tenantId, key);
        rows.push({
          tenantId,
          key,
          backlog: await redis.zcard(k.queue(key)),
          inProgress: Number(busy[key] ?? 0),
          limit: Number.isFinite(keyLimit) ? keyLimit : null,
          weight,
          dispatched: Number(dispatched[key] ?? 0),
        });
      }
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
