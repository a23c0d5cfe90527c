import { authorize, operationOf, type Authorization } from '../authorization.ts';
import type { AuthzDecision, AuthzResource } from './authz-hook.ts';

/**
 * Baton's own answer for end users (tokens with scopes, issue 35), before the hook: the one rule
 * of authorization.ts (`authorize`) for the operation, as a hook decision. `runs:own` reads,
 * decides and cancels the runs (and threads) the subject created and narrows lists to them;
 * `runs:start` starts runs of the allowed agents, on a new thread or one of the subject's own;
 * the per-id scopes name one run, thread or agent. Everything else (delete, fork, replay,
 * schedules, webhooks, waits, tokens, admin) needs a tenant key.
 */

export interface EndUser {
  readonly subject?: string;
  readonly scopes: readonly string[];
}

/** Operations that start a run; their resource names the agent and, maybe, the thread. */
export const START_OPERATIONS = new Set(['createRun', 'aiSdkChat', 'agUiRun']);
/** List operations that apply a narrowing (authorize-request.ts narrowRuns). */
export const NARROWABLE = new Set(['listRuns', 'listThreadRuns']);

export interface PolicyResource extends AuthzResource {
  /** For a start on a thread: whether the thread has runs already. */
  readonly threadExists?: boolean;
}

/** authorize() for an operationId and the resource the middleware read. */
export function authorizeOperation(
  user: EndUser,
  operationId: string,
  resource: PolicyResource,
  allowedAgents: readonly string[],
): Authorization {
  const { runId, threadId, owner, agent, threadExists } = resource;
  if (START_OPERATIONS.has(operationId) && runId !== undefined) {
    // A protocol turn on a thread whose run waits answers that run (the adapter checks
    // run.decide on it once it knows the turn is a decision): starting or deciding may pass.
    const { runId: _active, ...start } = resource;
    const decides = authorize(user, 'run.decide', {
      runId,
      ...(threadId !== undefined ? { threadId } : {}),
      ...(owner !== undefined ? { owner } : {}),
    });
    const starts = authorizeOperation(user, operationId, start, allowedAgents);
    return starts.allowed || !decides.allowed ? starts : decides;
  }
  return authorize(
    user,
    operationOf(operationId),
    {
      ...(runId !== undefined ? { runId } : {}),
      ...(threadId !== undefined ? { threadId } : {}),
      ...(owner !== undefined ? { owner } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(threadExists === false ? { freshThread: true } : {}),
    },
    allowedAgents,
  );
}

export function endUserBaseline(
  user: EndUser,
  operation: string,
  resource: PolicyResource,
  allowedAgents: readonly string[],
): AuthzDecision {
  if (!authorizeOperation(user, operation, resource, allowedAgents).allowed) return 'deny';
  return operation === 'listRuns' && user.subject !== undefined
    ? { narrow: { owner: user.subject } }
    : 'allow';
}
