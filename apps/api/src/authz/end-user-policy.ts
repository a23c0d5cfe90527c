import type { AuthzDecision, AuthzResource } from './authz-hook.ts';

/**
 * Baton's own rule for end users (tokens with scopes, issue 35), before the hook: a pure function
 * of the scopes, the resource's owner and the tenant's allowed agents. `runs:own` reads and decides
 * the runs (and threads) the subject created and narrows lists to them; `runs:start` starts runs of
 * the allowed agents, on a new thread or one of the subject's own; the per-id scopes name one run,
 * thread or agent. Everything else (cancel, delete, schedules, webhooks, admin) needs a tenant key.
 */

export interface EndUser {
  readonly subject?: string;
  readonly scopes: readonly string[];
}

/** Operations that start a run; their resource names the agent and, maybe, the thread. */
export const START_OPERATIONS = new Set(['createRun', 'aiSdkChat', 'agUiRun']);
const RUN_READS = new Set(['getRun', 'streamRunEvents']);
const THREAD_READS = new Set(['getThread', 'listThreadRuns', 'aiSdkResumeStream']);
/** List operations that apply a narrowing (authorize-request.ts narrowRuns). */
export const NARROWABLE = new Set(['listRuns', 'listThreadRuns']);

export interface PolicyResource extends AuthzResource {
  /** For a start on a thread: whether the thread has runs already. */
  readonly threadExists?: boolean;
}

function owns(user: EndUser, resource: AuthzResource): boolean {
  return (
    user.subject !== undefined &&
    resource.owner === user.subject &&
    user.scopes.includes('runs:own')
  );
}

/** Whether the user may see the run or thread at all (else a refusal is a 404, as for a missing one). */
export function canSee(user: EndUser, resource: AuthzResource): boolean {
  const has = (scope: string): boolean => user.scopes.includes(scope);
  if (resource.runId !== undefined)
    return (
      has(`run:read:${resource.runId}`) ||
      has(`run:decide:${resource.runId}`) ||
      owns(user, resource)
    );
  if (resource.threadId !== undefined)
    return (
      has(`thread:read:${resource.threadId}`) ||
      has(`thread:run:${resource.threadId}`) ||
      owns(user, resource)
    );
  return true;
}

export function endUserBaseline(
  user: EndUser,
  operation: string,
  resource: PolicyResource,
  allowedAgents: readonly string[],
): AuthzDecision {
  const has = (scope: string): boolean => user.scopes.includes(scope);
  if (START_OPERATIONS.has(operation)) {
    const agent = resource.agent;
    const agentOk =
      agent !== undefined &&
      (has(`agent:start:${agent}`) ||
        (has('runs:start') && (allowedAgents.includes('*') || allowedAgents.includes(agent))));
    const threadOk =
      resource.threadId === undefined ||
      has(`thread:run:${resource.threadId}`) ||
      (has('runs:start') &&
        user.subject !== undefined &&
        (resource.threadExists === false || resource.owner === user.subject));
    return agentOk && threadOk ? 'allow' : 'deny';
  }
  if (operation === 'listRuns')
    return has('runs:own') && user.subject !== undefined
      ? { narrow: { owner: user.subject } }
      : 'deny';
  if (RUN_READS.has(operation) || THREAD_READS.has(operation))
    return canSee(user, resource) ? 'allow' : 'deny';
  if (operation === 'submitDecisions')
    return resource.runId !== undefined &&
      (has(`run:decide:${resource.runId}`) || owns(user, resource))
      ? 'allow'
      : 'deny';
  if (operation === 'listAgents' || operation === 'getAgent') return 'allow';
  return 'deny';
}
