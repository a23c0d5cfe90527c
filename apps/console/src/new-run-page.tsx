import type { BatonClient } from '@baton/client';
import type { AgentDescriptor } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { navigate } from './route.ts';

/** Starts a run of any agent the workers advertise. */
export function NewRunPage({
  client,
  onUnauthorized,
}: {
  client: BatonClient;
  onUnauthorized: () => void;
}) {
  const [agents, setAgents] = useState<AgentDescriptor[] | null>(null);
  const [agent, setAgent] = useState('');
  const [message, setMessage] = useState('');
  const [thread, setThread] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    client.agents.list().then(
      (list) => {
        setAgents(list);
        setAgent((a) => a || list[0]?.name || '');
      },
      (e: unknown) => {
        if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
      },
    );
  }, [client]);

  const selected = agents?.find((a) => a.name === agent);

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const created = await client.runs.create({
        agent,
        input: { messages: [{ role: 'user', content: message }] },
        ...(thread.trim() ? { threadId: thread.trim() } : {}),
      });
      navigate({ page: 'run', runId: created.runId });
    } catch (err) {
      if (!handleAuth(err, onUnauthorized)) setError(describeError(err));
      setBusy(false);
    }
  };

  return (
    <section class="card narrow">
      <h1 tabIndex={-1}>Start a run</h1>
      {agents && agents.length === 0 && (
        <p role="alert">No agent is advertised: is a worker running?</p>
      )}
      <form onSubmit={(e) => void submit(e)}>
        <label for="run-agent">Agent</label>
        <select
          id="run-agent"
          required
          value={agent}
          onChange={(e) => setAgent(e.currentTarget.value)}
          aria-describedby="agent-help"
        >
          {(agents ?? []).map((a) => (
            <option key={a.name} value={a.name}>
              {a.name}
            </option>
          ))}
        </select>
        <p id="agent-help" class="muted">
          {selected
            ? `${selected.description ?? ''} Tools: ${selected.tools.map((t) => `${t.name}${t.approval ? ' (approval)' : ''}`).join(', ') || 'none'}.`
            : agents === null
              ? 'Loading agents…'
              : ''}
        </p>
        <label for="run-message">Message</label>
        <textarea
          id="run-message"
          required
          rows={3}
          value={message}
          onInput={(e) => setMessage(e.currentTarget.value)}
        />
        <label for="run-thread">Thread (optional)</label>
        <input
          id="run-thread"
          value={thread}
          placeholder="continue a conversation"
          onInput={(e) => setThread(e.currentTarget.value)}
        />
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || !agent}>
          {busy ? 'Starting…' : 'Start run'}
        </button>
      </form>
    </section>
  );
}
