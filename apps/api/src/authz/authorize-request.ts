import { BatonError } from '@baton/core';
import { RunNotFoundError } from '@baton/runtime';
import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth.ts';
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
import {
  NARROWABLE,
  START_OPERATIONS,
  canSee,
  endUserBaseline,
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
 * The run's owner is, until runs carry an owner field, the `baton.owner` metadata the API stamps
 * on runs an end user creates (withOwner); a thread's owner is its first run's.
 */

const OWNER_METADATA = 'baton.owner';

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

/** The subject that created a run (undefined: a tenant key's run, or none). */
async function runOwner(
  ctx: ApiContext,
  tenantId: string,
  runId: string,
): Promise<string | undefined> {
  try {
    const { checkpoint } = await ctx.service.load(tenantId, runId);
    return checkpoint.metadata[OWNER_METADATA];
  } catch (error) {
    if (error instanceof RunNotFoundError) return undefined;
    throw error;
  }
}

async function threadOwner(
  ctx: ApiContext,
  tenantId: string,
  threadId: string,
): Promise<{ exists: boolean; owner?: string }> {
  const page = await ctx.service.thread(tenantId, threadId, {
    before: null,
    limit: 1,
    maxBytes: 1,
  });
  const first = page.runIds[0] ?? page.activeRunId ?? undefined;
  if (first === undefined) return { exists: false };
  const owner = await runOwner(ctx, tenantId, first);
  return { exists: true, ...(owner !== undefined ? { owner } : {}) };
}

async function resourceOf(
  ctx: ApiContext,
  req: Request,
  tenantId: string,
  op: Operation,
  id: string | undefined,
): Promise<PolicyResource> {
  if (op.idKind === 'run' && id !== undefined) {
    const owner = await runOwner(ctx, tenantId, id);
    return { tenantId, runId: id, ...(owner !== undefined ? { owner } : {}) };
  }
  if (op.idKind === 'thread' && id !== undefined) {
    const t = await threadOwner(ctx, tenantId, id);
    return { tenantId, threadId: id, ...(t.owner !== undefined ? { owner: t.owner } : {}) };
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
    const resource = await resourceOf(ctx, req, principal.tenantId, op, id);
    const baseline = endUserBaseline(user, op.id, resource, opts.allowedAgents(principal.tenantId));
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
    // The AI SDK's resume answers 204 for a thread it does not know: so does another user's.
    if (op.id === 'aiSdkResumeStream' && !canSee(user, resource)) {
      res.status(204).end();
      return;
    }
    throw refusal(op, resource, user);
  };
}

function refusal(
  op: Operation,
  resource: PolicyResource,
  user: Parameters<typeof canSee>[0],
): Error {
  if (!canSee(user, resource)) {
    if (resource.runId !== undefined) return new RunNotFoundError(resource.runId);
    if (resource.threadId !== undefined && !START_OPERATIONS.has(op.id))
      return notFound(`thread ${resource.threadId} was not found`);
  }
  return new BatonError(
    'forbidden',
    `this token may not ${op.id}${resource.agent !== undefined ? ` (agent ${resource.agent})` : ''}: its scopes do not allow it`,
  );
}

/** Stamps the end user as the owner of the run they create (tenant keys' runs have none). */
export function withOwner<T extends { options?: { metadata?: Record<string, string> } }>(
  body: T,
  principal: Principal,
): T {
  if (principal.subject === undefined || principal.scopes === null) return body;
  return {
    ...body,
    options: {
      ...body.options,
      metadata: { ...body.options?.metadata, [OWNER_METADATA]: principal.subject },
    },
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
