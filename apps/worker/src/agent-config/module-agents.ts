import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentDefinition } from '@baton/core';
import { AgentConfigError } from './agent-config-error.ts';
import { importErrorLocation } from './import-error-location.ts';
import { resolveFromBatonToo } from './resolve-from-baton.ts';

function isAgent(value: unknown): value is AgentDefinition {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Partial<AgentDefinition>;
  return (
    typeof v.name === 'string' && typeof v.model?.stream === 'function' && Array.isArray(v.tools)
  );
}

function agentsIn(value: unknown): AgentDefinition[] | null {
  if (isAgent(value)) return [value];
  if (Array.isArray(value) && value.length > 0 && value.every(isAgent)) return value;
  return null;
}

/**
 * Agents exported by the user's module (`./agents.ts` or `./agents.ts:name`, relative to the
 * working directory): the named export, else the default export, else every export that is an
 * agent or an array of agents. Its bare imports that its folder cannot resolve resolve from
 * Baton's (resolve-from-baton.ts).
 */
export async function loadModuleAgents(
  specifier: string,
  cwd: string = process.cwd(),
): Promise<AgentDefinition[]> {
  const { path, exportName } = splitExport(specifier);
  const file = resolve(cwd, path);
  if (!existsSync(file))
    throw new AgentConfigError(
      'agents_module_invalid',
      `${path}: no such file (resolved to ${file}); BATON_AGENTS paths are relative to the working directory`,
    );
  resolveFromBatonToo(dirname(file));
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    const where = importErrorLocation(error, cwd);
    throw new AgentConfigError(
      'agents_module_invalid',
      `${path}: cannot import it: ${where === undefined ? '' : `${where}: `}${(error as Error).message.split('\n')[0]}`,
      { cause: error },
    );
  }
  const fix = 'export an AgentDefinition ({ name, model, tools }) or an array of them';
  if (exportName !== undefined) {
    if (!(exportName in module))
      throw new AgentConfigError(
        'agents_module_invalid',
        `${specifier}: the module has no export "${exportName}" (it exports ${Object.keys(module).sort().join(', ') || 'nothing'})`,
      );
    const agents = agentsIn(module[exportName]);
    if (!agents)
      throw new AgentConfigError(
        'agents_module_invalid',
        `${specifier}: export "${exportName}" is not an agent; ${fix}`,
      );
    return agents;
  }
  const fromDefault = agentsIn(module['default']);
  if (fromDefault) return fromDefault;
  const found = Object.entries(module)
    .filter(([name]) => name !== 'default')
    .flatMap(([, value]) => agentsIn(value) ?? []);
  if (found.length === 0)
    throw new AgentConfigError('agents_module_invalid', `${path}: exports no agent; ${fix}`);
  return [...new Set(found)];
}

/** `./file.ts:graph` → path and export; a colon inside the path (C:\) is not an export. */
export function splitExport(specifier: string): { path: string; exportName?: string } {
  const match = /^(.*\.[cm]?[jt]s):([A-Za-z_$][\w$]*)$/.exec(specifier);
  return match ? { path: match[1]!, exportName: match[2]! } : { path: specifier };
}
