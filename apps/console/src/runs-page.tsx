import type { BatonClient, ListRunsQuery } from '@baton/client';
import type { AgentDescriptor, RunStatus, RunSummary } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { usePolling } from './use-polling.ts';
import { href, navigate, type RunFilters } from './route.ts';

const STATUSES: readonly RunStatus[] = ['created', 'running', 'waiting', 'done'];

/**
 * The tenant's runs with filters (status, agent, thread, fairness key: GET /v1/runs's own query parameters,
 * kept in the URL); statuses refresh every two seconds.
 */
export function RunsPage({
  client,
  filters,
  onUnauthorized,
}: {
  client: BatonClient;
  filters: RunFilters;
  onUnauthorized: () => void;
}) {
  const status = filters.status ?? '';
  const agent = filters.agent ?? '';
  const thread = filters.thread ?? '';
  // What is typed in the thread box until it is committed (Enter, leaving the box): the list
  // re-renders every 2 s, and a box bound to the URL's value would lose the typing each time.
  const [threadDraft, setThreadDraft] = useState(thread);
  useEffect(() => setThreadDraft(thread), [thread]);
  const key = filters.key ?? '';
  const admission = filters.admission;
  const [keyDraft, setKeyDraft] = useState(key);
  useEffect(() => setKeyDraft(key), [key]);
  const setFilter = (change: {
    [K in keyof RunFilters]?: RunFilters[K] | undefined;
  }): void => {
    const next = { ...filters, ...change };
    navigate(
      {
        page: 'runs',
        filters: {
          ...(next.status ? { status: next.status } : {}),
          ...(next.agent ? { agent: next.agent } : {}),
          ...(next.thread?.trim() ? { thread: next.thread.trim() } : {}),
          ...(next.key?.trim() ? { key: next.key.trim() } : {}),
          ...(next.admission ? { admission: next.admission } : {}),
        },
      },
      { replace: true },
    );
  };
  const [agents, setAgents] = useState<AgentDescriptor[]>([]);
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [updated, setUpdated] = useState<Date | null>(null);

  useEffect(() => {
    client.agents.list().then(setAgents, (e: unknown) => handleAuth(e, onUnauthorized));
  }, [client]);

  usePolling(
    async (signal) => {
      const query: ListRunsQuery = {
        limit: 50,
        ...(status ? { status } : {}),
        ...(agent ? { agent } : {}),
        ...(thread ? { thread } : {}),
        ...(key ? { fairnessKey: key } : {}),
        ...(admission ? { admission } : {}),
      };
      const page = await client.runs.list(query, { signal });
      setRuns(page.runs);
      setError(null);
      setUpdated(new Date());
    },
    (e) => {
      if (handleAuth(e, onUnauthorized)) return true;
      setError(describeError(e));
    },
    [client, status, agent, thread, key, admission],
  );

  return (
    <section>
      <div class="title-row">
        <h1 tabIndex={-1}>Runs</h1>
        <a class="button" href={href({ page: 'new' })}>
          Start a run
        </a>
      </div>
      <form class="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label for="filter-status">Status</label>
          <select
            id="filter-status"
            value={status}
            onChange={(e) => {
              const value = e.currentTarget.value as RunStatus | '';
              setFilter(value ? { status: value } : { status: undefined });
            }}
          >
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="filter-agent">Agent</label>
          <select
            id="filter-agent"
            value={agent}
            onChange={(e) => setFilter({ agent: e.currentTarget.value || undefined })}
          >
            <option value="">any</option>
            {/* A linked filter may name an agent no worker advertises right now. */}
            {agent && !agents.some((a) => a.name === agent) && (
              <option value={agent}>{agent}</option>
            )}
            {agents.map((a) => (
              <option key={a.name} value={a.name}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="filter-thread">Thread</label>
          <input
            id="filter-thread"
            value={threadDraft}
            placeholder="thread id"
            onInput={(e) => setThreadDraft(e.currentTarget.value)}
            onChange={(e) => setFilter({ thread: e.currentTarget.value || undefined })}
          />
        </div>
        <div>
          <label for="filter-key">Fairness key</label>
          <input
            id="filter-key"
            value={keyDraft}
            placeholder="key (default: tenant)"
            onInput={(e) => setKeyDraft(e.currentTarget.value)}
            onChange={(e) => setFilter({ key: e.currentTarget.value || undefined })}
          />
        </div>
        <div>
          <label for="filter-admission">Admission</label>
          <select
            id="filter-admission"
            value={admission ?? ''}
            onChange={(e) =>
              setFilter({ admission: e.currentTarget.value === 'queued' ? 'queued' : undefined })
            }
          >
            <option value="">any</option>
            <option value="queued">queued for a slot</option>
          </select>
        </div>
      </form>
      <p class="muted" aria-live="polite">
        {error ? (
          <span role="alert">{error}</span>
        ) : updated ? (
          `Live · updated ${updated.toLocaleTimeString()}`
        ) : (
          'Loading…'
        )}
      </p>
      {runs && runs.length === 0 && (
        <p>
          {admission
            ? 'No run is waiting for a slot.'
            : 'No runs match. Start one with “Start a run”.'}
        </p>
      )}
      {runs && runs.length > 0 && (
        <table class="runs">
          <caption class="sr-only">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Agent</th>
              <th scope="col">Thread</th>
              <th scope="col">Status</th>
              <th scope="col">Priority · key</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.runId}>
                <td data-label="Run">
                  <a href={href({ page: 'run', runId: r.runId })}>{r.runId}</a>
                </td>
                <td data-label="Agent">
                  {r.agent}
                  {r.agentVersion !== undefined && (
                    <span class="muted mono"> @{r.agentVersion}</span>
                  )}
                </td>
                <td data-label="Thread">
                  <a
                    class="mono"
                    href={href({ page: 'runs', filters: { thread: r.threadId } })}
                    title="Runs of this thread"
                  >
                    {r.threadId}
                  </a>
                </td>
                <td data-label="Status">
                  <span class={`badge ${r.status}`}>{r.status}</span>
                  {r.queued && (
                    <span
                      class="badge queued"
                      title={`Waiting for a slot (${r.queued.reason.replaceAll('_', ' ')}): ${r.queued.inProgress} of its key in progress${r.queued.limit === undefined ? '' : ` (limit ${r.queued.limit})`}`}
                    >
                      queued {r.queued.position} of {r.queued.backlog}
                    </span>
                  )}
                </td>
                <td data-label="Priority · key">
                  {r.priority === undefined ? (
                    <span class="muted">—</span>
                  ) : (
                    <>
                      <span title="Priority: 1 first, 5 last">P{r.priority}</span>
                      {' · '}
                      <a
                        class="mono"
                        href={href({ page: 'runs', filters: { key: r.fairnessKey } })}
                        title="Runs of this fairness key"
                      >
                        {r.fairnessKey}
                      </a>
                    </>
                  )}
                </td>
                <td data-label="Updated">{new Date(r.updatedAt).toLocaleTimeString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
