import type { BatonClient, ListRunsQuery } from '@baton/client';
import type { AgentDescriptor, RunStatus, RunSummary } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { href } from './route.ts';

const STATUSES: readonly RunStatus[] = ['created', 'running', 'waiting', 'done'];
const POLL_MS = 2_000;

/** The tenant's runs with filters; statuses refresh every two seconds. */
export function RunsPage({
  client,
  onUnauthorized,
}: {
  client: BatonClient;
  onUnauthorized: () => void;
}) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [agent, setAgent] = useState('');
  const [thread, setThread] = useState('');
  const [agents, setAgents] = useState<AgentDescriptor[]>([]);
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [updated, setUpdated] = useState<Date | null>(null);

  useEffect(() => {
    client.agents.list().then(setAgents, (e: unknown) => handleAuth(e, onUnauthorized));
  }, [client]);

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const query: ListRunsQuery = {
      limit: 50,
      ...(status ? { status } : {}),
      ...(agent ? { agent } : {}),
      ...(thread.trim() ? { thread: thread.trim() } : {}),
    };
    const load = async (): Promise<void> => {
      try {
        const page = await client.runs.list(query, { signal: controller.signal });
        setRuns(page.runs);
        setError(null);
        setUpdated(new Date());
      } catch (e) {
        if (controller.signal.aborted || handleAuth(e, onUnauthorized)) return;
        setError(describeError(e));
      }
      timer = setTimeout(() => void load(), POLL_MS);
    };
    void load();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [client, status, agent, thread]);

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
            onChange={(e) => setStatus(e.currentTarget.value as RunStatus | '')}
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
          <select id="filter-agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
            <option value="">any</option>
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
            value={thread}
            placeholder="thread id"
            onChange={(e) => setThread(e.currentTarget.value)}
          />
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
      {runs && runs.length === 0 && <p>No runs match. Start one with “Start a run”.</p>}
      {runs && runs.length > 0 && (
        <table class="runs">
          <caption class="sr-only">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Agent</th>
              <th scope="col">Status</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.runId}>
                <td data-label="Run">
                  <a href={href({ page: 'run', runId: r.runId })}>{r.runId}</a>
                </td>
                <td data-label="Agent">{r.agent}</td>
                <td data-label="Status">
                  <span class={`badge ${r.status}`}>{r.status}</span>
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
