import {
  AgentVersionAdvertSchema,
  type AgentVersionAdvert,
  type AgentVersionInfo,
  type StepJob,
  type Versioning,
} from '@baton/protocol';
import { AgentLiveness, type ServedVersion } from './agent-liveness.ts';
import {
  currentVersion,
  newestFirst,
  promoted,
  rollbackPlan,
  type PromotedVersion,
} from './current-version.ts';
import { NothingToRollBackError, UnknownAgentVersionError } from './errors/agent-version-errors.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

/**
 * How long adverts, liveness and the current version are reused: a promote reaches every API
 * within this (the promoting one at once), a version whose first worker starts is routed to
 * within it. Half the 1 s the docs promise.
 */
const CACHE_MS = 500;

/** A run to route by version (a StepTarget with its version). */
export interface VersionedTarget {
  readonly runId: string;
  readonly tenantId: string;
  readonly agent: string;
  readonly agentVersion?: string | undefined;
  readonly priority?: number | undefined;
}

/** Where a version's jobs go: its task queue, whether a live worker serves it, its versioning. */
export interface VersionRoute {
  readonly taskQueue: string;
  readonly live: boolean;
  readonly versioning: Versioning;
}

/** A run parked for want of a worker of its version: what waking it enqueues. */
interface ParkedStep {
  readonly target: VersionedTarget;
  readonly reason: StepJob['reason'];
  readonly version: number;
}

const field = (agent: string, version: string): string => `${agent}\n${version}`;

function parseAdvert(raw: string | null | undefined): AgentVersionAdvert | null {
  if (!raw) return null;
  try {
    const parsed = AgentVersionAdvertSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function parsePromoted(raw: string | null | undefined): PromotedVersion | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as { version?: unknown; history?: unknown };
    if (typeof v.version !== 'string') return null;
    const history = Array.isArray(v.history)
      ? v.history.filter((h): h is string => typeof h === 'string')
      : [];
    return { version: v.version, history };
  } catch {
    return null;
  }
}

/**
 * Agent versions in Redis (docs/ARCHITECTURE.md "Routing and queue shards", agent versions):
 * what workers advertise per (agent, version), which version new runs get (promote/rollback),
 * where a version's jobs go, the runs parked while no worker serves their version, and the
 * per-version run sets GET /v1/agents counts. Producers ask `route`, cached CACHE_MS; a worker
 * answers its own versions without a read, so a pinned run's steps cost no command more.
 */
export class AgentVersions {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  readonly liveness: AgentLiveness;
  /** Versions this process serves (a worker): agent -> its version. */
  private readonly local = new Map<
    string,
    { version: string; versioning: Versioning; firstSeen?: number }
  >();
  private localTaskQueue = '';
  private adverts = new Map<string, AgentVersionAdvert>();
  private advertsAt = -Infinity;
  private pendingAdverts: Promise<void> | null = null;
  private readonly liveAt = new Map<string, { live: boolean; at: number }>();
  private readonly currentAt = new Map<string, { version: string | null; at: number }>();

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
    this.liveness = new AgentLiveness(redis, keys);
  }

  /** This process (a worker) serves these versions on `taskQueue`: routed without a read. */
  serve(
    served: readonly { agent: string; version: string; versioning: Versioning }[],
    taskQueue: string,
  ): void {
    for (const s of served)
      this.local.set(s.agent, { version: s.version, versioning: s.versioning });
    this.localTaskQueue = taskQueue;
  }

  /** The version this process serves the agent as (undefined: not served here). */
  localVersion(agent: string): string | undefined {
    return this.local.get(agent)?.version;
  }

  /** The (agent, version) pairs this process serves. */
  served(): ServedVersion[] {
    return [...this.local].map(([agent, v]) => ({ agent, version: v.version }));
  }

  /**
   * Publishes this worker's versions (with each heartbeat: one HSET; the first also reads when
   * each was first seen, which decides "newest").
   */
  async advertise(now: number, taskQueue = this.localTaskQueue): Promise<void> {
    if (this.local.size === 0) return;
    this.localTaskQueue = taskQueue;
    const entries = [...this.local];
    if (entries.some(([, v]) => v.firstSeen === undefined)) {
      const prior = await this.redis.hmget(
        this.keys.agentVersions,
        ...entries.map(([a, v]) => field(a, v.version)),
      );
      entries.forEach(([, v], i) => {
        v.firstSeen = parseAdvert(prior[i])?.firstSeen ?? now;
      });
    }
    const fields: string[] = [];
    for (const [agent, v] of entries) {
      const advert: AgentVersionAdvert = {
        agent,
        version: v.version,
        versioning: v.versioning,
        taskQueue,
        firstSeen: v.firstSeen ?? now,
        updatedAt: now,
      };
      fields.push(field(agent, v.version), JSON.stringify(advert));
    }
    await this.redis.hset(this.keys.agentVersions, ...fields);
  }

  /** Every version advert (cached CACHE_MS). */
  private async allAdverts(force = false): Promise<Map<string, AgentVersionAdvert>> {
    if (force || Date.now() - this.advertsAt > CACHE_MS) {
      this.pendingAdverts ??= this.redis
        .hgetall(this.keys.agentVersions)
        .then((all) => {
          const next = new Map<string, AgentVersionAdvert>();
          for (const [f, raw] of Object.entries(all)) {
            const advert = parseAdvert(raw);
            if (advert) next.set(f, advert);
          }
          this.adverts = next;
          this.advertsAt = Date.now();
        })
        .finally(() => {
          this.pendingAdverts = null;
        });
      await this.pendingAdverts;
    }
    return this.adverts;
  }

  /** The versions of an agent ever advertised (newest first). */
  async versionsOf(agent: string, force = false): Promise<AgentVersionAdvert[]> {
    const all = await this.allAdverts(force);
    return newestFirst([...all.values()].filter((a) => a.agent === agent));
  }

  /** Whether a live worker serves the version (cached CACHE_MS; this process's own: yes). */
  async isLive(agent: string, version: string, force = false): Promise<boolean> {
    if (this.local.get(agent)?.version === version) return true;
    const f = field(agent, version);
    const cached = this.liveAt.get(f);
    if (!force && cached && Date.now() - cached.at < CACHE_MS) return cached.live;
    const [workers] = await this.liveness.versionWorkers([{ agent, version }]);
    const live = (workers ?? []).length > 0;
    this.liveAt.set(f, { live, at: Date.now() });
    return live;
  }

  /** Whether any live worker serves any version of the agent (cached CACHE_MS). */
  async agentServed(agent: string): Promise<boolean> {
    if (this.local.has(agent)) return true;
    const f = `${agent}\n*`;
    const cached = this.liveAt.get(f);
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.live;
    const live = ((await this.liveness.workers([agent])).get(agent) ?? []).length > 0;
    this.liveAt.set(f, { live, at: Date.now() });
    return live;
  }

  /**
   * Where the version's jobs go; null for a version never advertised (route as before versions:
   * by agent). A version the cached adverts do not know is read at once (its first worker may
   * be newer than the cache).
   */
  async route(agent: string, version: string): Promise<VersionRoute | null> {
    const mine = this.local.get(agent);
    if (mine?.version === version)
      return { taskQueue: this.localTaskQueue, live: true, versioning: mine.versioning };
    const f = field(agent, version);
    let advert = (await this.allAdverts()).get(f);
    if (!advert) {
      advert = parseAdvert(await this.redis.hget(this.keys.agentVersions, f)) ?? undefined;
      if (!advert) return null;
      this.adverts.set(f, advert);
    }
    return {
      taskQueue: advert.taskQueue,
      live: await this.isLive(agent, version),
      versioning: advert.versioning,
    };
  }

  private async readPromoted(agent: string): Promise<PromotedVersion | null> {
    return parsePromoted(await this.redis.hget(this.keys.agentCurrentVersions, agent));
  }

  /** The version new runs of the agent get (cached CACHE_MS); null: it has none (unversioned). */
  async current(agent: string, force = false): Promise<string | null> {
    const cached = this.currentAt.get(agent);
    if (!force && cached && Date.now() - cached.at < CACHE_MS) return cached.version;
    const [cachedVersions, pinned] = await Promise.all([
      this.versionsOf(agent, force),
      this.readPromoted(agent),
    ]);
    // An agent the cached adverts do not know is read again at once: its first versioned worker
    // may be newer than the cache, and its first runs must not go unversioned. Not cached when
    // it has none (a pool of a release before versions): such an agent pays one read per create.
    const versions =
      cachedVersions.length > 0 || force ? cachedVersions : await this.versionsOf(agent, true);
    const candidates = await this.candidates(agent, versions, force);
    const version = currentVersion(candidates, pinned);
    if (version !== null) this.currentAt.set(agent, { version, at: Date.now() });
    return version;
  }

  private async candidates(
    agent: string,
    versions: readonly AgentVersionAdvert[],
    force = false,
  ): Promise<{ version: string; firstSeen: number; live: boolean }[]> {
    return Promise.all(
      versions.map(async (v) => ({
        version: v.version,
        firstSeen: v.firstSeen,
        live: await this.isLive(agent, v.version, force),
      })),
    );
  }

  /** Sets the version new runs get (operators: POST /v1/admin/agents/:agent/promote). */
  async promote(
    agent: string,
    version: string,
  ): Promise<{ currentVersion: string; previousVersion: string | null }> {
    const versions = await this.versionsOf(agent, true);
    if (!versions.some((v) => v.version === version))
      throw new UnknownAgentVersionError(
        agent,
        version,
        versions.map((v) => v.version),
      );
    const before = await this.readPromoted(agent);
    const was = currentVersion(await this.candidates(agent, versions, true), before);
    await this.redis.hset(
      this.keys.agentCurrentVersions,
      agent,
      JSON.stringify(promoted(version, before, was)),
    );
    this.currentAt.delete(agent);
    return { currentVersion: version, previousVersion: was };
  }

  /** Back to the version current before the last promote (or the next older one). */
  async rollback(
    agent: string,
  ): Promise<{ currentVersion: string; previousVersion: string | null }> {
    const versions = await this.versionsOf(agent, true);
    const before = await this.readPromoted(agent);
    const candidates = await this.candidates(agent, versions, true);
    const was = currentVersion(candidates, before);
    const plan = rollbackPlan(candidates, before);
    if (plan.kind === 'nothing_to_roll_back') throw new NothingToRollBackError(agent, plan.current);
    await this.redis.hset(this.keys.agentCurrentVersions, agent, JSON.stringify(plan.to));
    this.currentAt.delete(agent);
    return { currentVersion: plan.to.version, previousVersion: was };
  }

  // --- Runs parked while no worker serves their version -----------------------------------------

  /** Parks the run's next step (no job, no slot) until a worker of its version starts. */
  async park(target: VersionedTarget, reason: StepJob['reason'], version: number): Promise<void> {
    const v = target.agentVersion as string;
    const step: ParkedStep = { target, reason, version };
    await this.redis.hset(
      this.keys.parkedVersionRuns(target.agent, v),
      target.runId,
      JSON.stringify(step),
    );
    await this.redis.sadd(this.keys.parkedVersions, field(target.agent, v));
    // A worker of it may have started since the cached liveness: it wakes on its next beat.
    this.liveAt.delete(field(target.agent, v));
  }

  /** How many runs of the version are parked, and whether this one is (GET /v1/runs/:id). */
  async parked(agent: string, version: string, runId: string): Promise<number | null> {
    const key = this.keys.parkedVersionRuns(agent, version);
    const [held, count] = await Promise.all([this.redis.hexists(key, runId), this.redis.hlen(key)]);
    return held === 1 ? count : null;
  }

  /**
   * A worker (each heartbeat): the parked runs of the versions it serves get their step job
   * (`enqueue`: BatonQueues.enqueueStep, which now routes to this worker's queue). One
   * SMISMEMBER when nothing is parked.
   */
  async wake(
    enqueue: (
      target: VersionedTarget,
      reason: StepJob['reason'],
      version: number,
    ) => Promise<unknown>,
  ): Promise<number> {
    const served = this.served();
    if (served.length === 0) return 0;
    const fields = served.map((s) => field(s.agent, s.version));
    const present = await this.redis.smismember(this.keys.parkedVersions, ...fields);
    let woken = 0;
    for (const [i, s] of served.entries()) {
      if (present[i] !== 1) continue;
      // Removed first: a run parked from now on adds it again, and is woken next beat.
      await this.redis.srem(this.keys.parkedVersions, fields[i] as string);
      const key = this.keys.parkedVersionRuns(s.agent, s.version);
      for (const [runId, raw] of Object.entries(await this.redis.hgetall(key))) {
        const step = JSON.parse(raw) as ParkedStep;
        await enqueue(step.target, step.reason, step.version);
        await this.redis.hdel(key, runId);
        woken += 1;
      }
    }
    return woken;
  }

  // --- Runs per version (drainage) ---------------------------------------------------------------

  /** A run created on its version, in progress or waiting (its thread, a human). */
  async track(
    identity: Pick<VersionedTarget, 'runId' | 'agent' | 'agentVersion'>,
    activity: 'created' | 'active' | 'waiting' | 'done',
    /** For 'done': whether it may be in the waiting set (false: it finished from active). */
    mayWait = true,
  ): Promise<void> {
    if (identity.agentVersion === undefined) return;
    const k = this.keys.versionRuns(identity.agent, identity.agentVersion);
    const { runId } = identity;
    // One command per change in the common cases (created, and finished from active): these
    // are per run, and versions must cost at most 2 commands per step over none.
    if (activity === 'done') {
      await Promise.all([
        this.redis.srem(k.active, runId),
        ...(mayWait ? [this.redis.srem(k.waiting, runId)] : []),
      ]);
      return;
    }
    if (activity === 'created') {
      await this.redis.sadd(k.active, runId);
      return;
    }
    await Promise.all([
      this.redis.sadd(k.active, runId),
      activity === 'waiting'
        ? this.redis.sadd(k.waiting, runId)
        : this.redis.srem(k.waiting, runId),
    ]);
  }

  /** GET /v1/agents: each agent's versions (newest first) with workers, runs and which is current. */
  async describe(agents: readonly string[]): Promise<
    Map<
      string,
      {
        versions: AgentVersionInfo[];
        currentVersion?: string;
        currentPinned: boolean;
        versioning?: Versioning;
      }
    >
  > {
    const out = new Map<
      string,
      {
        versions: AgentVersionInfo[];
        currentVersion?: string;
        currentPinned: boolean;
        versioning?: Versioning;
      }
    >();
    await this.allAdverts(true);
    for (const agent of agents) {
      const versions = await this.versionsOf(agent);
      if (versions.length === 0) continue;
      const pinned = await this.readPromoted(agent);
      const workers = await this.liveness.versionWorkers(
        versions.map((v) => ({ agent, version: v.version })),
      );
      const cur = currentVersion(
        versions.map((v, i) => ({
          version: v.version,
          firstSeen: v.firstSeen,
          live: (workers[i] ?? []).length > 0,
        })),
        pinned,
      );
      const infos = await Promise.all(
        versions.map(async (v, i): Promise<AgentVersionInfo> => {
          const k = this.keys.versionRuns(agent, v.version);
          const [inProgress, waiting, unavailable] = await Promise.all([
            this.redis.scard(k.active),
            this.redis.scard(k.waiting),
            this.redis.hlen(this.keys.parkedVersionRuns(agent, v.version)),
          ]);
          return {
            version: v.version,
            versioning: v.versioning,
            firstSeen: v.firstSeen,
            workers: workers[i] ?? [],
            runs: { inProgress, waiting: waiting + unavailable, versionUnavailable: unavailable },
            current: v.version === cur,
          };
        }),
      );
      out.set(agent, {
        versions: infos,
        ...(cur === null ? {} : { currentVersion: cur }),
        currentPinned: pinned !== null && pinned.version === cur,
        ...(versions[0] ? { versioning: versions[0].versioning } : {}),
      });
    }
    return out;
  }
}
