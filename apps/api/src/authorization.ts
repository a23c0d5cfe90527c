import { BatonError } from '@baton/core';
import { parseScope, type ParsedScope } from '@baton/protocol';
import { RunNotFoundError } from '@baton/runtime';
import type { Request, RequestHandler } from 'express';
import type { Principal } from './auth.ts';

/** The metadata key that holds a run's owner (the subject whose token started it). */
export const OWNER_METADATA = 'baton.owner';

/** What a request wants to do (one per route of /v1 and the protocol adapters). */
export type Operation =
  | 'run.read'
  | 'run.decide'
  | 'run.cancel'
  | 'run.delete'
  | 'run.create'
  | 'runs.list'
  | 'thread.read'
  | 'thread.run'
  /** Every other route (schedules, agents, webhooks, token minting, thread deletion …). */
  | 'tenant';

/** What the operation is done to: the run (with what decides access to it), the thread, the agent. */
export interface Resource {
  readonly runId?: string;
  readonly threadId?: string;
  readonly owner?: string;
  readonly agent?: string;
  /** run.create on a thread that holds nothing yet (a new chat): runs:start may start it. */
  readonly freshThread?: boolean;
}

export type Authorization =
  | { readonly allowed: true }
  /** 404: the credential cannot see the resource at all (answered like a missing one). */
  | { readonly allowed: false; readonly status: 404 | 403; readonly reason: string };

const ALLOW: Authorization = { allowed: true };

const scopeCache = new WeakMap<readonly string[], ParsedScope[]>();

function parsedScopes(scopes: readonly string[]): ParsedScope[] {
  let parsed = scopeCache.get(scopes);
  if (!parsed) {
    parsed = scopes.map(parseScope).filter((s): s is ParsedScope => s !== null);
    scopeCache.set(scopes, parsed);
  }
  return parsed;
}

function has(scopes: ParsedScope[], test: (s: ParsedScope) => boolean): boolean {
  return scopes.some(test);
}

/**
 * Whether `principal` may do `operation` to `resource`: the one check every route makes. A
 * credential without scopes (a tenant API key) may do anything of its tenant (routes check the
 * tenant themselves). A scoped one (a token) may only what its scopes say; a run it cannot see at
 * all is a 404, like another tenant's, and one it sees but may not change is a 403.
 */
export function authorize(
  principal: Principal,
  operation: Operation,
  resource: Resource = {},
): Authorization {
  if (principal.scopes === null) return ALLOW;
  const scopes = parsedScopes(principal.scopes);
  const { runId, threadId, owner, agent } = resource;
  const sub = principal.subject;
  const owns = owner !== undefined && sub !== undefined && owner === sub;
  const ownsRun = owns && has(scopes, (s) => s.kind === 'runs:own');
  const threadRead = (s: ParsedScope): boolean =>
    (s.kind === 'thread:read' || s.kind === 'thread:run') && s.threadId === threadId;
  const seesRun =
    runId !== undefined &&
    (ownsRun ||
      has(
        scopes,
        (s) =>
          ((s.kind === 'run:read' || s.kind === 'run:decide') && s.runId === runId) ||
          threadRead(s),
      ));
  const decidesRun =
    runId !== undefined &&
    (ownsRun ||
      has(
        scopes,
        (s) =>
          (s.kind === 'run:decide' && s.runId === runId) ||
          (s.kind === 'thread:run' && s.threadId === threadId),
      ));
  const notFound: Authorization = {
    allowed: false,
    status: 404,
    reason: 'not visible to this token',
  };
  const forbid = (reason: string): Authorization => ({ allowed: false, status: 403, reason });
  switch (operation) {
    case 'run.read':
      return seesRun ? ALLOW : notFound;
    case 'run.decide':
    case 'run.cancel':
      if (decidesRun) return ALLOW;
      return seesRun
        ? forbid(`this token may read run ${runId} but not decide or cancel it`)
        : notFound;
    case 'run.delete':
      return seesRun ? forbid('deleting a run needs a tenant API key') : notFound;
    case 'run.create': {
      const onThread = threadId !== undefined;
      const mayStartHere = !onThread || resource.freshThread === true || owns;
      if (
        has(
          scopes,
          (s) =>
            (s.kind === 'agent:start' && s.agent === agent) ||
            (s.kind === 'runs:start' && mayStartHere) ||
            (s.kind === 'thread:run' && s.threadId === threadId),
        )
      )
        return ALLOW;
      return forbid(
        onThread
          ? `this token may not start runs on thread ${threadId}`
          : `this token may not start runs of agent ${agent ?? '(none)'}`,
      );
    }
    case 'runs.list':
      return has(scopes, (s) => s.kind === 'runs:own') && sub !== undefined
        ? ALLOW
        : forbid('listing runs needs the runs:own scope (and a subject) or a tenant API key');
    case 'thread.read':
      return has(scopes, threadRead) ? ALLOW : notFound;
    case 'thread.run':
      if (has(scopes, (s) => s.kind === 'thread:run' && s.threadId === threadId)) return ALLOW;
      return has(scopes, threadRead)
        ? forbid(`this token may read thread ${threadId} but not start runs on it`)
        : notFound;
    case 'tenant':
      return forbid('this route needs a tenant API key; a token only reaches what its scopes name');
  }
}

/** authorize, thrown: 404 as the missing run (or thread) would be, 403 forbidden. */
export function assertAuthorized(
  principal: Principal,
  operation: Operation,
  resource: Resource = {},
): void {
  const result = authorize(principal, operation, resource);
  if (result.allowed) return;
  if (result.status === 403) throw new BatonError('forbidden', result.reason);
  if (resource.runId !== undefined) throw new RunNotFoundError(resource.runId);
  throw new BatonError('not_found', `thread ${resource.threadId ?? ''} not found`);
}

/**
 * Routes a token may reach at all (each then checks its resource); every other /v1 route is
 * 'tenant' (403 for a token). Keeps a route added later closed to tokens until it says otherwise.
 */
const TOKEN_ROUTES: readonly [string, RegExp][] = [
  ['POST', /^\/runs$/],
  ['GET', /^\/runs$/],
  ['GET', /^\/runs\/[^/]+$/],
  ['GET', /^\/runs\/[^/]+\/events$/],
  ['POST', /^\/runs\/[^/]+\/decisions$/],
  ['POST', /^\/runs\/[^/]+\/cancel$/],
  ['DELETE', /^\/runs\/[^/]+$/],
  ['GET', /^\/threads\/[^/]+$/],
  ['GET', /^\/threads\/[^/]+\/runs$/],
];

/** The /v1 guard: a scoped credential only reaches TOKEN_ROUTES. */
export const tokenRouteGuard: RequestHandler = (req: Request, _res, next) => {
  const principal = req.principal;
  if (principal === undefined || principal.scopes === null) {
    next();
    return;
  }
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  if (TOKEN_ROUTES.some(([m, re]) => m === method && re.test(req.path))) {
    next();
    return;
  }
  const denied = authorize(principal, 'tenant') as Authorization & { allowed: false };
  next(new BatonError('forbidden', denied.reason));
};

/** What authorizeRun reads of a run: its checkpoint (thread, agent, owner). */
interface RunLoader {
  load(
    tenantId: string,
    runId: string,
  ): Promise<{
    checkpoint: { identity: { threadId: string; agent: string }; metadata: Record<string, string> };
  }>;
}

/**
 * authorize for an operation on a run of the principal's tenant, reading the run only when the
 * scopes alone do not allow it (a tenant key, or a token naming the run, costs no read).
 */
export async function authorizeRun(
  service: RunLoader,
  principal: Principal,
  operation: Operation,
  runId: string,
): Promise<void> {
  if (authorize(principal, operation, { runId }).allowed) return;
  const { checkpoint } = await service.load(principal.tenantId, runId);
  const owner = checkpoint.metadata[OWNER_METADATA];
  assertAuthorized(principal, operation, {
    runId,
    threadId: checkpoint.identity.threadId,
    agent: checkpoint.identity.agent,
    ...(owner !== undefined ? { owner } : {}),
  });
}
