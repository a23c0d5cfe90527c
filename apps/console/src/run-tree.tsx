import type { BatonClient } from '@baton/client';
import { MAX_CHILD_DEPTH, type ChildRunView, type RunView } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';
import { handleAuth } from './errors.ts';
import { href } from './route.ts';

/** A child run's own children: read from its view, again each time the page refreshes. */
function useChildren(
  client: BatonClient,
  runId: string,
  tick: number,
  onUnauthorized: () => void,
): readonly ChildRunView[] {
  const [children, setChildren] = useState<readonly ChildRunView[]>([]);
  useEffect(() => {
    const controller = new AbortController();
    client.runs.get(runId, { signal: controller.signal }).then(
      (view) => setChildren(view.childRuns ?? []),
      (e: unknown) => {
        // A child that is not created yet (or gone) simply shows no children.
        if (!controller.signal.aborted) handleAuth(e, onUnauthorized);
      },
    );
    return () => controller.abort();
  }, [client, runId, tick]);
  return children;
}

function ChildNode({
  client,
  child,
  depth,
  tick,
  onUnauthorized,
}: {
  client: BatonClient;
  child: ChildRunView;
  depth: number;
  tick: number;
  onUnauthorized: () => void;
}) {
  const grandchildren = useChildren(client, child.childRunId, tick, onUnauthorized);
  return (
    <li data-testid={`child-${child.childRunId}`}>
      <a class="mono" href={href({ page: 'run', runId: child.childRunId })}>
        {child.childRunId}
      </a>{' '}
      <span class={`badge ${child.status ?? ''}`}>{child.status ?? 'not started'}</span>{' '}
      <span class="muted">
        {/* An agent tool is often named after its agent: "researcher", not "researcher · for researcher". */}
        {child.childAgentId}
        {child.toolName !== child.childAgentId ? ` · for ${child.toolName}` : ''}
        {child.attempt > 0 ? ` (attempt ${child.attempt})` : ''}
      </span>
      {grandchildren.length > 0 && depth < MAX_CHILD_DEPTH && (
        <ChildList
          client={client}
          runs={grandchildren}
          depth={depth + 1}
          tick={tick}
          onUnauthorized={onUnauthorized}
        />
      )}
    </li>
  );
}

function ChildList({
  client,
  runs,
  depth,
  tick,
  onUnauthorized,
}: {
  client: BatonClient;
  runs: readonly ChildRunView[];
  depth: number;
  tick: number;
  onUnauthorized: () => void;
}) {
  return (
    <ul class="tree">
      {runs.map((c) => (
        <ChildNode
          key={c.childRunId}
          client={client}
          child={c}
          depth={depth}
          tick={tick}
          onUnauthorized={onUnauthorized}
        />
      ))}
    </ul>
  );
}

/**
 * Where the run sits in its tree (agent-as-tool): its parent and root, and its child runs with
 * their children, each linked with its status. `tick` changes whenever the page refreshes, so
 * the descendants' statuses follow the run's.
 */
export function RunTree({
  client,
  run,
  tick,
  onUnauthorized,
}: {
  client: BatonClient;
  run: RunView;
  tick: number;
  onUnauthorized: () => void;
}) {
  const children = run.childRuns ?? [];
  if (!run.parent && children.length === 0) return null;
  return (
    <section aria-labelledby="tree-title">
      <h2 id="tree-title">Run tree</h2>
      {run.parent && (
        <p data-testid="run-parent">
          Child run of{' '}
          <a class="mono" href={href({ page: 'run', runId: run.parent.runId })}>
            {run.parent.runId}
          </a>{' '}
          <span class="muted">
            ({run.parent.agent}, call {run.parent.toolName}, depth {run.parent.depth})
          </span>
          {run.parent.rootRunId !== run.parent.runId && (
            <>
              {' · root '}
              <a class="mono" href={href({ page: 'run', runId: run.parent.rootRunId })}>
                {run.parent.rootRunId}
              </a>
            </>
          )}
        </p>
      )}
      {children.length > 0 && (
        <ChildList
          client={client}
          runs={children}
          depth={(run.parent?.depth ?? 0) + 1}
          tick={tick}
          onUnauthorized={onUnauthorized}
        />
      )}
    </section>
  );
}
