import { createHash } from 'node:crypto';
import { describeTool, type AgentDefinition } from '@baton/core';
import { ConfigError } from './errors/config-error.ts';
import { AgentVersionSchema, type Versioning } from '@baton/protocol';

/** JSON with object keys sorted at every depth: the same content always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * What a derived version is a hash of (docs/deployment-and-scaling.md "Agent versions"): the
 * system prompt, the model's id, each tool's name and input JSON schema (sorted by name) and the
 * execution mode. A change to any of them is a new version; descriptions, plugins, retries and
 * tool code are not in it (give `version` explicitly to version a change of code).
 */
function agentVersionMaterial(agent: AgentDefinition): string {
  return canonical({
    systemPrompt: agent.systemPrompt ?? null,
    model: agent.model.id,
    tools: agent.tools
      .map((t) => ({ name: t.name, inputSchema: describeTool(t).inputSchema }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    executionMode: agent.executionMode ?? 'sequential',
  });
}

/**
 * The version a worker serves an agent as: its `version` when given, else `h-` and the first 12
 * hex digits of the SHA-256 of agentVersionMaterial.
 */
export function agentVersionOf(agent: AgentDefinition): string {
  if (agent.version !== undefined) {
    const parsed = AgentVersionSchema.safeParse(agent.version);
    if (!parsed.success)
      throw new ConfigError(
        `agent ${agent.name}: version ${JSON.stringify(agent.version)} ${parsed.error.issues[0]?.message ?? 'is invalid'}`,
      );
    return agent.version;
  }
  const digest = createHash('sha256').update(agentVersionMaterial(agent)).digest('hex');
  return `h-${digest.slice(0, 12)}`;
}

/** The agent's versioning ('pinned' unless it says 'auto-upgrade'). */
export function versioningOf(agent: AgentDefinition): Versioning {
  return agent.versioning ?? 'pinned';
}
