import { AgentDescriptorSchema, type AgentDescriptor } from '@baton/protocol';
import { describeTool, Engine, type AgentDefinition, type AgentSpec } from '@baton/core';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

export function agentsKey(keys: BatonKeys): string {
  return keys.agentsKey();
}

export function describeAgent(
  agent: AgentDefinition,
  workers: string[],
  now: number,
): AgentDescriptor {
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

  /** Publishes what this worker can run so the API validates and lists agents without their code. */
  async advertise(
    redis: RedisClient,
    keys: BatonKeys,
    workerId: string,
    now: number,
  ): Promise<void> {
    const key = agentsKey(keys);
    const existing = await redis.hgetall(key);
    const fields: string[] = [];
    for (const agent of this.list()) {
      let workers = [workerId];
      const prior = existing[agent.name];
      if (prior) {
        const parsed = AgentDescriptorSchema.safeParse(JSON.parse(prior));
        if (parsed.success) workers = [...new Set([...parsed.data.workers.slice(-20), workerId])];
      }
      fields.push(agent.name, JSON.stringify(describeAgent(agent, workers, now)));
    }
    if (fields.length > 0) await redis.hset(key, ...fields);
  }
}

/** Reads the advertised agents (API side). */
export class AgentCatalog {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;

  constructor(redis: RedisClient, keys: BatonKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  async list(): Promise<AgentDescriptor[]> {
    const all = await this.redis.hgetall(agentsKey(this.keys));
    return Object.values(all)
      .flatMap((raw) => {
        const parsed = AgentDescriptorSchema.safeParse(JSON.parse(raw));
        return parsed.success ? [parsed.data] : [];
      })
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async get(name: string): Promise<AgentDescriptor | null> {
    const raw = await this.redis.hget(agentsKey(this.keys), name);
    if (raw === null) return null;
    const parsed = AgentDescriptorSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  }
}

export function specOf(descriptor: AgentDescriptor): AgentSpec {
  return {
    name: descriptor.name,
    executionMode: descriptor.executionMode,
    ...(descriptor.replayPolicy === undefined ? {} : { replayPolicy: descriptor.replayPolicy }),
    stopConditions: descriptor.stopConditions,
    stateKeys: descriptor.stateKeys,
  };
}
