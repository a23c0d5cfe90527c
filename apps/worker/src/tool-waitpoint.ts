import type { ToolWaitpoint } from '@baton/core';
import type { RunIdentity } from '@baton/protocol';
import type { WorkerDeps } from './worker-deps.ts';

/** ToolContext.waitpoint for one call, when the worker can create waitpoints. */
export function toolWaitpoint(
  deps: Pick<WorkerDeps, 'waits'>,
  identity: RunIdentity,
  toolCallId: string,
): { waitpoint?: (opts?: { readonly expiresInMs?: number }) => Promise<ToolWaitpoint> } {
  const { waits } = deps;
  if (!waits) return {};
  return {
    waitpoint: (opts) => waits.createToolWaitpoint(identity, toolCallId, opts?.expiresInMs),
  };
}
