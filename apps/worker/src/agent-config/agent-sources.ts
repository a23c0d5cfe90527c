import { extname } from 'node:path';
import { processEnv } from '@baton/runtime/internal';
import type { AgentDefinition, Clock } from '@baton/core';
import { loadAgents } from '../agents.ts';
import { AgentConfigError } from './agent-config-error.ts';
import type { LoadedAgents } from './agents-file.ts';
import { loadModuleAgents, splitExport } from './module-agents.ts';

const AGENTS_FILE_EXTENSIONS = ['.yaml', '.yml', '.json'];

const MODULE_EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'];
const BUILT_IN_SETS = ['demo', 'matrix', 'children'];

export interface AgentSourceOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
}

/**
 * Every agent the worker runs, from BATON_AGENTS (comma separated: built-in sets, module paths,
 * agents files) and BATON_AGENTS_FILE. Default: the demo set.
 */
export async function loadAgentSources(
  clock: Clock,
  options: AgentSourceOptions = {},
): Promise<LoadedAgents> {
  const env = options.env ?? processEnv();
  const entries = (env['BATON_AGENTS'] ?? (env['BATON_AGENTS_FILE'] ? '' : 'demo'))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (env['BATON_AGENTS_FILE']) entries.push(env['BATON_AGENTS_FILE']);
  const agents: AgentDefinition[] = [];
  const closers: LoadedAgents[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(closers.map((c) => c.close()));
  };
  try {
    for (const entry of entries) {
      const ext = extname(splitExport(entry).path).toLowerCase();
      if (AGENTS_FILE_EXTENSIONS.includes(ext)) {
        // Loaded on demand: the providers and the MCP SDK are not worth a demo worker's start-up.
        const { loadAgentsFile } = await import('./agents-file.ts');
        const loaded = await loadAgentsFile(entry, { env });
        closers.push(loaded);
        agents.push(...loaded.agents);
      } else if (MODULE_EXTENSIONS.includes(ext)) {
        agents.push(...(await loadModuleAgents(entry, options.cwd)));
      } else if (BUILT_IN_SETS.includes(entry)) {
        agents.push(...loadAgents([entry], clock));
      } else {
        throw new AgentConfigError(
          'agents_source_unknown',
          `BATON_AGENTS: "${entry}" is neither a built-in set (${BUILT_IN_SETS.join(', ')}), a module (${MODULE_EXTENSIONS.join(', ')}) nor an agents file (${AGENTS_FILE_EXTENSIONS.join(', ')})`,
        );
      }
    }
    const seen = new Set<string>();
    for (const agent of agents) {
      if (seen.has(agent.name))
        throw new AgentConfigError(
          'agents_source_unknown',
          `BATON_AGENTS: two agents are named "${agent.name}"; agent names must be unique per worker`,
        );
      seen.add(agent.name);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { agents, close };
}
