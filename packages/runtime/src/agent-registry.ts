import { AgentAdvertSchema, type AgentAdvert, type AgentDescriptor } from '@baton/protocol';
import { describeTool, Engine, type AgentDefinition, type AgentSpec } from '@baton/core';
import { AgentLiveness } from './agent-liveness.ts';
import type { AgentVersions } from './agent-versions.ts';
import { DEFAULT_TASK_QUEUE } from './queue-shards.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

export function agentsKey(keys: BatonKeys): string {
  return keys.agentsKey();
}

function describeAgent(
  agent: AgentDefinition,
  workers: string[],
  now: number,
  taskQueue: string,
): AgentAdvert {
  return {
    name: agent.name,
    ...(agent.description === undefined ? {} : { description: agent.description }),
    executionMode: agent.executionMode ?? 'sequential',
    ...(agent.replayPolicy === undefined ? {} : { replayPolicy: agent.replayPolicy }),
    stopConditions: [...(agent.stopConditions ?? [])],
    stateKeys: (agent.stateKeys ?? []).map((k) => ({ ...k })),
    tools: agent.tools.map(describeTool),
    workers,
    updatedAt: now,
    taskQueue,
  };
}

/** The agents this worker process runs (code), one engine each. */
export class AgentRegistry {
  private readonly engines = new Map<string, Engine>();

  constructor(agents: readonly AgentDefinition[]) {
    for (const agent of agents) {
      if (this.engines.has(agent.name)) throw new Error(`agent ${agent.name} is registered twice`);
      this.engines.set(agent.name, new Engine(agent));
    }
  }

  engine(name: string): Engine | undefined {
    return this.engines.get(name);
  }

  list(): AgentDefinition[] {
    return [...this.engines.values()].map((e) => e.agent);
  }

  /**
   * Publishes what this worker can run so the API validates and lists agents without their code,
   * and on which task queue: where producers put the agents' runs.
   */
  async advertise(
    redis: RedisClient,
    keys: BatonKeys,
    workerId: string,
    now: number,
    taskQueue = DEFAULT_TASK_QUEUE,
  ): Promise<void> {
    const key = agentsKey(keys);
    const existing = await redis.hgetall(key);
    const fields: string[] = [];
    for (const agent of this.list()) {
      let workers = [workerId];
      const prior = existing[agent.name];
      if (prior) {
        const parsed = AgentAdvertSchema.safeParse(JSON.parse(prior));
        if (parsed.success) workers = [...new Set([...parsed.data.workers.slice(-20), workerId])];
      }
      fields.push(agent.name, JSON.stringify(describeAgent(agent, workers, now, taskQueue)));
    }
    if (fields.length > 0) await redis.hset(key, ...fields);
  }
}

function parseAdvert(raw: string): AgentAdvert | null {
  try {
    const parsed = AgentAdvertSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Reads the advertised agents (API side) with their live workers. An agent stays known after its
 * last worker is gone (its runs are accepted and wait); it is listed with `available: false`.
 */
export class AgentCatalog {
  readonly liveness: AgentLiveness;
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  /**
   * The last advert read per agent, by its stored text: creating a run reads the advert every
   * time, and it only changes when a worker advertises again (a parse per run was the API's
   * largest own cost of creating one). One entry per agent name, replaced when the text changes.
   */
  private readonly parsed = new Map<
    string,
    { readonly raw: string; readonly advert: AgentAdvert }
  >();

  /** Versions per agent (GET /v1/agents); absent in tests that build a catalog alone. */
  private readonly versions: AgentVersions | undefined;

  constructor(redis: RedisClient, keys: BatonKeys, versions?: AgentVersions) {
    this.redis = redis;
    this.keys = keys;
    this.liveness = new AgentLiveness(redis, keys);
    this.versions = versions;
  }

  /** The descriptors with each agent's versions, current version and runs per version. */
  private async withVersions(agents: AgentDescriptor[]): Promise<AgentDescriptor[]> {
    if (!this.versions) return agents;
    const described = await this.versions.describe(agents.map((a) => a.name));
    return agents.map((a) => {
      const v = described.get(a.name);
      return v ? { ...a, ...v } : a;
    });
  }

  /** Names of every known agent (cheap: no liveness lookup). */
  async names(): Promise<string[]> {
    return (await this.redis.hkeys(agentsKey(this.keys))).sort();
  }

  async list(): Promise<AgentDescriptor[]> {
    const all = await this.redis.hgetall(agentsKey(this.keys));
    const adverts = Object.values(all)
      .flatMap((raw) => parseAdvert(raw) ?? [])
      .sort((a, b) => a.name.localeCompare(b.name));
    const live = await this.liveness.workers(adverts.map((a) => a.name));
    return this.withVersions(adverts.map((a) => withLiveness(a, live.get(a.name) ?? [])));
  }

  async get(name: string): Promise<AgentDescriptor | null> {
    const raw = await this.redis.hget(agentsKey(this.keys), name);
    const advert = raw === null ? null : parseAdvert(raw);
    if (!advert) return null;
    const live = await this.liveness.workers([name]);
    const [described] = await this.withVersions([withLiveness(advert, live.get(name) ?? [])]);
    return described ?? null;
  }

  /** The agent's advert alone (no liveness lookup): what creating a run needs. */
  async advert(name: string): Promise<AgentAdvert | null> {
    const raw = await this.redis.hget(agentsKey(this.keys), name);
    if (raw === null) return null;
    const known = this.parsed.get(name);
    if (known?.raw === raw) return known.advert;
    const advert = parseAdvert(raw);
    if (advert) this.parsed.set(name, { raw, advert });
    else this.parsed.delete(name);
    return advert;
  }

  /** Whether a live worker runs the agent now. */
  async available(name: string): Promise<boolean> {
    return ((await this.liveness.workers([name])).get(name) ?? []).length > 0;
  }
}

function withLiveness(advert: AgentAdvert, workers: string[]): AgentDescriptor {
  return { ...advert, workers, available: workers.length > 0 };
}

export function specOf(descriptor: AgentAdvert): AgentSpec {
  return {
    name: descriptor.name,
    executionMode: descriptor.executionMode,
    ...(descriptor.replayPolicy === undefined ? {} : { replayPolicy: descriptor.replayPolicy }),
    stopConditions: descriptor.stopConditions,
    stateKeys: descriptor.stateKeys,
  };
}
