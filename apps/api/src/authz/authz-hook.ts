import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../config.ts';

/**
 * The authorization hook (BATON_AUTHZ, issue 35): the tenant's own rule for what scopes cannot
 * say, e.g. "support agents read every run of their organisation". A module exporting a function
 * that sees the caller, the operation (the route's OpenAPI operationId) and the resource, and
 * answers allow, deny or a narrowing of a list. It is asked for end users (tokens with scopes),
 * after Baton's own rule, whose answer it gets as `baseline`; its answer is final. An error
 * or an answer of any other shape refuses the request (403, fail closed).
 */

export interface AuthzCaller {
  readonly tenantId: string;
  readonly subject?: string;
  /** The verified token's claims (an identity provider's or Baton's). */
  readonly claims: Readonly<Record<string, unknown>>;
  readonly scopes: readonly string[] | null;
}

export interface AuthzResource {
  readonly tenantId: string;
  readonly runId?: string;
  readonly threadId?: string;
  /** The agent a run is (to be) started of. */
  readonly agent?: string;
  /** The subject that created the run (absent: created with a tenant key, or no run). */
  readonly owner?: string;
}

/** A list narrowed to the items matching every field given (list routes apply it). */
export interface AuthzFilter {
  readonly owner?: string;
  readonly agent?: string;
  readonly threadId?: string;
  readonly fairnessKey?: string;
}

export type AuthzDecision = 'allow' | 'deny' | { readonly narrow: AuthzFilter };

export interface AuthzInput {
  readonly caller: AuthzCaller;
  readonly operation: string;
  readonly resource: AuthzResource;
  /** What Baton's own rule answered (scopes, ownership, allowed agents). */
  readonly baseline: AuthzDecision;
}

export type AuthzHook = (input: AuthzInput) => AuthzDecision | Promise<AuthzDecision>;

const FILTER_KEYS = new Set(['owner', 'agent', 'threadId', 'fairnessKey']);

/** The hook's answer if it is one; null for anything else (which refuses the request). */
export function asDecision(value: unknown): AuthzDecision | null {
  if (value === 'allow' || value === 'deny') return value;
  if (value === null || typeof value !== 'object' || !('narrow' in value)) return null;
  const narrow = value.narrow;
  if (narrow === null || typeof narrow !== 'object') return null;
  for (const [key, v] of Object.entries(narrow))
    if (!FILTER_KEYS.has(key) || typeof v !== 'string') return null;
  return { narrow: narrow };
}

/**
 * The hook of BATON_AUTHZ (`./authz.ts` or `./authz.ts:exportName`, relative to `cwd`): the named
 * export, else the default export, else the one exported function.
 */
export async function loadAuthzHook(specifier: string, cwd = process.cwd()): Promise<AuthzHook> {
  const match = /^(.*\.[cm]?[jt]s):([A-Za-z_$][\w$]*)$/.exec(specifier);
  const path = match ? match[1]! : specifier;
  const exportName = match?.[2];
  const file = resolve(cwd, path);
  if (!existsSync(file))
    throw new ConfigError(
      `BATON_AUTHZ: ${path}: no such file (resolved to ${file}); the path is relative to the working directory`,
    );
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(
      `BATON_AUTHZ: ${path}: cannot import it: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const candidates =
    exportName !== undefined
      ? [module[exportName]]
      : typeof module['default'] === 'function'
        ? [module['default']]
        : Object.values(module).filter((v) => typeof v === 'function');
  if (candidates.length !== 1 || typeof candidates[0] !== 'function')
    throw new ConfigError(
      `BATON_AUTHZ: ${specifier}: export one function ({caller, operation, resource, baseline}) => 'allow' | 'deny' | {narrow} (as default, or name it after a colon)`,
    );
  return candidates[0] as AuthzHook;
}
