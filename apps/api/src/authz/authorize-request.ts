import { BatonError } from '@baton/core';
import { isBatonError } from '@baton/protocol';
import { RunNotFoundError } from '@baton/runtime';
import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { ApiContext } from '../context.ts';
import { notFound } from '../errors.ts';
import type { Json } from '../openapi/shared.ts';
import {
  asDecision,
  type AuthzDecision,
  type AuthzFilter,
  type AuthzHook,
  type AuthzInput,
} from './authz-hook.ts';
import { OWNER_METADATA, authorize } from '../authorization.ts';
import {
  NARROWABLE,
  START_OPERATIONS,
  authorizeOperation,
  endUserBaseline,
  type EndUser,
  type PolicyResource,
} from './end-user-policy.ts';

/**
 * Authorization of end users (principals with scopes: identity-provider or Baton tokens), as a
 * middleware after authentication: the request's operation is looked up in /openapi.json's
 * paths (its operationId), its resource read from the path, the body and the run's owner, then
 * Baton's rule (end-user-policy.ts) and the hook (BATON_AUTHZ) decide. Tenant and admin keys
 * (scopes null) pass untouched. A refused run or thread the user cannot see answers exactly as a
 * missing one (404); anything else refused is 403.
 *
 * The rule itself is authorization.ts (`authorize`): this is the only place that applies it to a
 * request, for Baton's tokens and identity providers' tokens alike. The run's owner is the
 * `baton.owner` metadata the API stamps on runs an end user creates (authorization.ts
 * withOwner); a thread's owner is its first run's.
 */

interface Operation {
  readonly id: string;
  readonly method: string;
  readonly pattern: RegExp;
  /** What the path's {id} names. */
  readonly idKind: 'run' | 'thread' | 'other' | null;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** A list route's narrowing for this end user (applied by narrowRuns). */
    authzNarrow?: AuthzFilter;
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Every operation of the OpenAPI document, as method + path pattern → operationId. */
function operationTable(paths: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(paths)) {
    const pattern = new RegExp(
      `^${path
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith('{') ? '([^/]+)' : escape(part)))
        .join('')}/?$`,
    );
    const idKind = !path.includes('{')
      ? null
      : path.startsWith('/v1/runs/')
        ? 'run'
        : path.startsWith('/v1/threads/') || path.startsWith('/v1/ai-sdk/chat/')
          ? 'thread'
          : 'other';
    for (const [method, op] of Object.entries(item as Record<string, { operationId?: string }>))
      if (op.operationId !== undefined)
        ops.push({ id: op.operationId, method: method.toUpperCase(), pattern, idKind });
  }
  return ops;
}

function matchOperation(
  ops: readonly Operation[],
  method: string,
  path: string,
): { op: Operation; id?: string } | null {
  for (const op of ops) {
    if (op.method !== method) continue;
    const m = op.pattern.exec(path);
    if (m) {
      let id: string | undefined;
      try {
        id = m[1] === undefined ? undefined : decodeURIComponent(m[1]);
      } catch {
        return null; // a malformed escape: the route answers its own 400
      }
      return { op, ...(id !== undefined ? { id } : {}) };
    }
  }
  return null;
}

function stringAt(value: unknown, ...path: string[]): string | undefined {
  let v = value;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** What decides a run's access: its owner and thread (nothing: no such run of the tenant). */
async function runFacts(
  ctx: ApiContext,
  tenantId: string,
  runId: string,
): Promise<{ owner?: string; threadId?: string }> {
  try {
    const { checkpoint } = await ctx.service.load(tenantId, runId);
    const owner = checkpoint.metadata[OWNER_METADATA];
    return { threadId: checkpoint.identity.threadId, ...(owner !== undefined ? { owner } : {}) };
  } catch (error) {
    if (isBatonError(error, 'run_not_found')) return {};
    throw error;
  }
}

async function runOwner(
  ctx: ApiContext,
  tenantId: string,
  runId: string,
): Promise<string | undefined> {
  return (await runFacts(ctx, tenantId, runId)).owner;
}

async function threadOwner(
  ctx: ApiContext,
  tenantId: string,
  threadId: string,
): Promise<{ exists: boolean; owner?: string; activeRunId?: string }> {
  const page = await ctx.service.thread(tenantId, threadId, {
    before: null,
    limit: 1,
    maxBytes: 1,
  });
  const first = page.runIds[0] ?? page.activeRunId ?? undefined;
  if (first === undefined) return { exists: false };
  const owner = await runOwner(ctx, tenantId, first);
  return {
    exists: true,
    ...(owner !== undefined ? { owner } : {}),
    ...(page.activeRunId ? { activeRunId: page.activeRunId } : {}),
  };
}

async function resourceOf(
  ctx: ApiContext,
  req: Request,
  tenantId: string,
  op: Operation,
  id: string | undefined,
): Promise<PolicyResource | null> {
  if (op.idKind === 'run' && id !== undefined) {
    const { owner, threadId } = await runFacts(ctx, tenantId, id);
    // No such run of this tenant: whatever a token's scopes name, it is missing (404).
    if (threadId === undefined) throw new RunNotFoundError(id);
    return {
      tenantId,
      runId: id,
      ...(threadId !== undefined ? { threadId } : {}),
      ...(owner !== undefined ? { owner } : {}),
    };
  }
  if (op.idKind === 'thread' && id !== undefined) {
    const t = await threadOwner(ctx, tenantId, id);
    if (!t.exists) return null;
    // A chat's stream follows its active run: that run's reader may read it (publicAccessToken).
    const active =
      op.id === 'aiSdkResumeStream' && t.activeRunId !== undefined ? { runId: t.activeRunId } : {};
    return {
      tenantId,
      threadId: id,
      ...active,
      ...(t.owner !== undefined ? { owner: t.owner } : {}),
    };
  }
  if (START_OPERATIONS.has(op.id)) {
    const body: unknown = req.body;
    // As the routes read them: AG-UI names the agent in forwardedProps, the AI SDK in the body;
    // both fall back to PROTOCOL_DEFAULT_AGENT. The chat id is the thread.
    const agent =
      op.id === 'agUiRun'
        ? (stringAt(body, 'forwardedProps', 'agent') ?? ctx.config.PROTOCOL_DEFAULT_AGENT)
        : op.id === 'aiSdkChat'
          ? (stringAt(body, 'agent') ?? ctx.config.PROTOCOL_DEFAULT_AGENT)
          : stringAt(body, 'agent');
    const threadId = op.id === 'aiSdkChat' ? stringAt(body, 'id') : stringAt(body, 'threadId');
    const resource: PolicyResource = {
      tenantId,
      ...(agent !== undefined ? { agent } : {}),
      ...(threadId !== undefined ? { threadId } : {}),
    };
    if (threadId === undefined) return resource;
    const t = await threadOwner(ctx, tenantId, threadId);
    return {
      ...resource,
      ...(op.id !== 'createRun' && t.activeRunId !== undefined ? { runId: t.activeRunId } : {}),
      threadExists: t.exists,
      ...(t.owner !== undefined ? { owner: t.owner } : {}),
    };
  }
  return { tenantId };
}

/** The hook's answer, or a refusal when it throws or answers something else (fail closed). */
async function askHook(hook: AuthzHook, input: AuthzInput, logger: Logger): Promise<AuthzDecision> {
  const refuse = (why: string): never => {
    // The claims stay out of the log (they may hold e-mail addresses, tokens of other systems).
    logger.error(
      { operation: input.operation, tenantId: input.caller.tenantId, why },
      'authorization hook failed; request refused',
    );
    throw new BatonError(
      'forbidden',
      'the authorization hook (BATON_AUTHZ) failed, so the request is refused; see the API log',
      { reason: 'authz_hook_failed' },
    );
  };
  let answer: unknown;
  try {
    answer = await hook(input);
  } catch (error) {
    return refuse(error instanceof Error ? `${error.name}: ${error.message}` : 'threw');
  }
  return asDecision(answer) ?? refuse('answered neither "allow", "deny" nor {narrow: {…}}');
}

export interface AuthorizeOptions {
  /** /openapi.json's paths; read on the first end user's request (tenant keys never need them). */
  readonly paths: () => Json;
  readonly hook?: AuthzHook;
  /** The tenant's allowed agents for runs:start (its identity provider's `allowedAgents`). */
  readonly allowedAgents: (tenantId: string) => readonly string[];
}

export function authorizeRequest(ctx: ApiContext, opts: AuthorizeOptions): RequestHandler {
  let ops: Operation[] | undefined;
  return async (req, res, next) => {
    const principal = req.principal;
    if (principal === undefined || principal.scopes === null) {
      next();
      return;
    }
    const path = `${req.baseUrl}${req.path}`;
    ops ??= operationTable(opts.paths());
    const found = matchOperation(ops, req.method === 'HEAD' ? 'GET' : req.method, path);
    // A route /openapi.json does not list is not open to tokens (fail closed; an unknown path
    // would be a 404 anyway).
    if (found === null)
      throw new BatonError('forbidden', 'this route is not open to tokens; use an API key');
    const { op, id } = found;
    const user = {
      scopes: principal.scopes,
      ...(principal.subject !== undefined ? { subject: principal.subject } : {}),
    };
    // A token that names the run (publicAccessToken) costs no read without a hook: the route
    // itself looks the run up in the token's tenant, so another tenant's is still a 404.
    if (
      opts.hook === undefined &&
      op.idKind === 'run' &&
      id !== undefined &&
      authorizeOperation(user, op.id, { tenantId: principal.tenantId, runId: id }, []).allowed
    ) {
      next();
      return;
    }
    const resource = await resourceOf(ctx, req, principal.tenantId, op, id);
    if (resource === null) {
      // No such thread of this tenant: answered as the route answers a missing one.
      if (op.id === 'aiSdkResumeStream') res.status(204).end();
      else next(notFound(`thread ${id ?? ''} was not found`));
      return;
    }
    const agents = opts.allowedAgents(principal.tenantId);
    const baseline = endUserBaseline(user, op.id, resource, agents);
    const { threadExists: _exists, ...publicResource } = resource;
    const decision = opts.hook
      ? await askHook(
          opts.hook,
          {
            caller: {
              tenantId: principal.tenantId,
              ...(principal.subject !== undefined ? { subject: principal.subject } : {}),
              claims: principal.claims ?? {},
              scopes: principal.scopes,
            },
            operation: op.id,
            resource: publicResource,
            baseline,
          },
          ctx.logger,
        )
      : baseline;
    if (decision === 'allow') {
      next();
      return;
    }
    if (decision !== 'deny' && NARROWABLE.has(op.id)) {
      req.authzNarrow = decision.narrow;
      next();
      return;
    }
    const refused = refusal(op, resource, user, agents);
    // The AI SDK's resume answers 204 for a thread it does not know: so does another user's.
    if (op.id === 'aiSdkResumeStream' && refused instanceof NotVisible) {
      res.status(204).end();
      return;
    }
    throw refused.error;
  };
}

class NotVisible {
  readonly error: Error;
  constructor(error: Error) {
    this.error = error;
  }
}

/**
 * Why the request is refused: what the credential cannot see at all answers as a missing run or
 * thread would (404, another tenant's included); anything else is 403.
 */
function refusal(
  op: Operation,
  resource: PolicyResource,
  user: EndUser,
  agents: readonly string[],
): NotVisible | { error: Error } {
  const ruled = authorizeOperation(user, op.id, resource, agents);
  // The hook refused what the rule allows: still a 404 for what the user cannot read.
  const visible = ruled.allowed
    ? resource.runId !== undefined
      ? authorize(user, 'run.read', resource).allowed
      : resource.threadId !== undefined && !START_OPERATIONS.has(op.id)
        ? authorize(user, 'thread.read', resource).allowed
        : true
    : ruled.status === 403;
  if (!visible) {
    if (resource.runId !== undefined && op.idKind === 'run')
      return new NotVisible(new RunNotFoundError(resource.runId));
    return new NotVisible(notFound(`thread ${resource.threadId ?? ''} was not found`));
  }
  return {
    error: new BatonError(
      'forbidden',
      ruled.allowed
        ? `the authorization hook (BATON_AUTHZ) refused ${op.id} to this token`
        : `this token may not ${op.id}${resource.agent !== undefined ? ` (agent ${resource.agent})` : ''}: ${ruled.reason}`,
    ),
  };
}

type RunItem = {
  readonly runId: string;
  readonly agent: string;
  readonly threadId: string;
  readonly fairnessKey?: string;
};

/** A page narrowed for an end user (a page may hold fewer runs than its limit). */
export async function narrowRuns<T extends RunItem>(
  ctx: ApiContext,
  req: Request,
  tenantId: string,
  runs: readonly T[],
): Promise<T[]> {
  const narrow = req.authzNarrow;
  if (narrow === undefined) return [...runs];
  const kept = runs.filter(
    (r) =>
      (narrow.agent === undefined || r.agent === narrow.agent) &&
      (narrow.threadId === undefined || r.threadId === narrow.threadId) &&
      (narrow.fairnessKey === undefined || r.fairnessKey === narrow.fairnessKey),
  );
  if (narrow.owner === undefined) return kept;
  const owners = await Promise.all(kept.map((r) => runOwner(ctx, tenantId, r.runId)));
  return kept.filter((_, i) => owners[i] === narrow.owner);
}
