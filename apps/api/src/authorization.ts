import { parseScope, type ParsedScope } from '@baton/protocol';
import type { Principal } from './auth.ts';

/**
 * The one rule for scoped credentials (Baton tokens and identity-provider tokens alike): what a
 * principal may do, by operation, to a resource. Pure; authz/authorize-request.ts applies it to
 * every request (by the route's OpenAPI operationId, OPERATIONS below) and hands its answer to
 * the BATON_AUTHZ hook. A credential without scopes (a tenant or managed API key) may do
 * everything of its tenant; the routes check the tenant themselves.
 */

/** The metadata key that holds a run's owner (the subject whose token started it). */
export const OWNER_METADATA = 'baton.owner';

/** What a request wants to do. */
export type Operation =
  | 'run.read'
  | 'run.decide'
  | 'run.cancel'
  | 'run.delete'
  | 'run.create'
  | 'runs.list'
  | 'thread.read'
  /** A chat's stream: the thread's reader, or the reader of its active run. */
  | 'thread.stream'
  | 'agents.read'
  /** Every other route (schedules, webhooks, fork and replay, minting, admin …). */
  | 'tenant';

/**
 * Each OpenAPI operationId a scoped credential may reach, and as what; an operation not listed
 * (one added later included) is 'tenant': 403 for a token, or 404 when it names a run the token
 * cannot see.
 */
const OPERATIONS: Readonly<Record<string, Operation>> = {
  createRun: 'run.create',
  aiSdkChat: 'run.create',
  agUiRun: 'run.create',
  listRuns: 'runs.list',
  getRun: 'run.read',
  streamRunEvents: 'run.read',
  submitDecisions: 'run.decide',
  cancelRun: 'run.cancel',
  deleteRun: 'run.delete',
  getThread: 'thread.read',
  listThreadRuns: 'thread.read',
  aiSdkResumeStream: 'thread.stream',
  listAgents: 'agents.read',
  getAgent: 'agents.read',
};

export function operationOf(operationId: string): Operation {
  return OPERATIONS[operationId] ?? 'tenant';
}

/** What the operation is done to: the run (with what decides access to it), the thread, the agent. */
export interface Resource {
  readonly runId?: string;
  readonly threadId?: string;
  /** The run's owner; for a thread, its first run's. */
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
 * Whether `principal` may do `operation` to `resource`. A scoped credential may only what its
 * scopes say; a run or thread it cannot see at all is a 404, like another tenant's, and one it
 * sees but may not change is a 403. `allowedAgents` bounds runs:start (an identity provider's
 * `allowedAgents`; '*' every agent, the default for a tenant without one).
 */
export function authorize(
  principal: Pick<Principal, 'scopes' | 'subject'>,
  operation: Operation,
  resource: Resource = {},
  allowedAgents: readonly string[] = ['*'],
): Authorization {
  if (principal.scopes === null) return ALLOW;
  const scopes = parsedScopes(principal.scopes);
  const { runId, threadId, owner, agent } = resource;
  const sub = principal.subject;
  const owns = owner !== undefined && sub !== undefined && owner === sub;
  const ownsIt = owns && has(scopes, (s) => s.kind === 'runs:own');
  const threadRead = (s: ParsedScope): boolean =>
    threadId !== undefined &&
    (s.kind === 'thread:read' || s.kind === 'thread:run') &&
    s.threadId === threadId;
  const seesRun =
    runId !== undefined &&
    (ownsIt ||
      has(
        scopes,
        (s) =>
          ((s.kind === 'run:read' || s.kind === 'run:decide') && s.runId === runId) ||
          threadRead(s),
      ));
  const decidesRun =
    runId !== undefined &&
    (ownsIt ||
      has(
        scopes,
        (s) =>
          (s.kind === 'run:decide' && s.runId === runId) ||
          (s.kind === 'thread:run' && s.threadId === threadId),
      ));
  const seesThread = threadId !== undefined && (ownsIt || has(scopes, threadRead));
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
      const agentAllowed =
        agent !== undefined && (allowedAgents.includes('*') || allowedAgents.includes(agent));
      if (
        has(
          scopes,
          (s) =>
            (s.kind === 'agent:start' && s.agent === agent && (!onThread || mayStartHere)) ||
            (s.kind === 'runs:start' && sub !== undefined && agentAllowed && mayStartHere) ||
            (s.kind === 'thread:run' && s.threadId === threadId),
        )
      )
        return ALLOW;
      return forbid(
        onThread
          ? `this token may not start runs of agent ${agent ?? '(none)'} on thread ${threadId}`
          : `this token may not start runs of agent ${agent ?? '(none)'}`,
      );
    }
    case 'runs.list':
      return has(scopes, (s) => s.kind === 'runs:own') && sub !== undefined
        ? ALLOW
        : forbid('listing runs needs the runs:own scope (and a subject) or a tenant API key');
    case 'thread.read':
      return seesThread ? ALLOW : notFound;
    case 'thread.stream':
      return seesThread || seesRun ? ALLOW : notFound;
    case 'agents.read':
      return ALLOW;
    case 'tenant':
      if (runId !== undefined && !seesRun) return notFound;
      if (runId === undefined && threadId !== undefined && !seesThread) return notFound;
      return forbid('this route needs a tenant API key; a token only reaches what its scopes name');
  }
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
