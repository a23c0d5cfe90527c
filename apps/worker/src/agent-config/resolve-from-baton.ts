// The namespace, not a named import: Node 20 (the published worker's floor) has no registerHooks,
// and a named import of a missing export would fail the whole module there.
import * as nodeModule from 'node:module';
import { sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/** file: URLs (ending in "/") of the folders agent modules were loaded from. */
const agentFolders = new Set<string>();
let registered = false;

const isBare = (specifier: string): boolean =>
  !/^(?:\.{0,2}\/|[a-z][a-z0-9+.-]*:)/i.test(specifier) && !specifier.startsWith('#');

/**
 * Lets an agent module outside Baton's tree (`BATON_AGENTS=../my-agents/agents.ts`) import
 * what the worker itself has (`@baton/core`, `zod`, the AI SDK providers) without installing
 * anything: a bare import resolves from the module's own folder first, as Node does, and only
 * if nothing is found there from this package's location. Its own node_modules, when it has
 * them, win. Node < 22.15 has no in-thread resolve hooks: there, the folder needs its own.
 */
export function resolveFromBatonToo(folder: string): void {
  agentFolders.add(pathToFileURL(folder.endsWith(sep) ? folder : folder + sep).href);
  const registerHooks = (nodeModule as Partial<typeof nodeModule>).registerHooks;
  if (registered || typeof registerHooks !== 'function') return;
  registered = true;
  const batonParent = import.meta.url;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context);
      } catch (error) {
        const parent = context.parentURL;
        if (
          (error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND' ||
          !isBare(specifier) ||
          parent === undefined ||
          parent.includes('/node_modules/') ||
          ![...agentFolders].some((folder) => parent.startsWith(folder))
        )
          throw error;
        try {
          return nextResolve(specifier, { ...context, parentURL: batonParent });
        } catch {
          throw error; // the agent module's own error names its folder, the one to install into
        }
      }
    },
  });
}
