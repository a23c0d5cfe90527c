import type { BatonClient } from '@baton/client';
import { DEFAULT_PRIORITY, type CreateRunResponse } from '@baton/protocol';
import { useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { href, navigate } from './route.ts';
import { AdmissionFields, admissionOptions, useAgents } from './run-options-fields.tsx';

/**
 * Starts a run of any agent the workers advertise, with its priority, fairness key and webhook
 * (docs/fairness.md); a generated webhook secret is shown once before the run opens.
 */
export function NewRunPage({
  client,
  onUnauthorized,
}: {
  client: BatonClient;
  onUnauthorized: () => void;
}) {
  const [message, setMessage] = useState('');
  const [thread, setThread] = useState('');
  const [priority, setPriority] = useState(DEFAULT_PRIORITY);
  const [fairnessKey, setFairnessKey] = useState('');
  const [webhookUrl, setWebhookUrl] = useState('');
  const [created, setCreated] = useState<CreateRunResponse | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const { agents, agent, setAgent } = useAgents(client, onUnauthorized, setError);

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
        ...(webhookUrl.trim() ? { webhook: { url: webhookUrl.trim() } } : {}),
        options: admissionOptions(priority, fairnessKey),
      });
      // The generated secret is shown this once: the run's page cannot show it again.
      if (created.webhook?.secret) setCreated(created);
      else navigate({ page: 'run', runId: created.runId });
    } catch (err) {
      if (!handleAuth(err, onUnauthorized)) setError(describeError(err));
      setBusy(false);
    }
  };

  if (created?.webhook?.secret)
    return (
      <section class="card narrow">
        <h1 tabIndex={-1}>Run started</h1>
        <p>
          Its webhook signing secret, shown only this once (verify deliveries to{' '}
          <span class="mono">{created.webhook.url}</span> with it):
        </p>
        <p class="mono" data-testid="webhook-secret">
          {created.webhook.secret}
        </p>
        <a class="button" href={href({ page: 'run', runId: created.runId })}>
          Open the run
        </a>
      </section>
    );

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
        <AdmissionFields
          idPrefix="run"
          labels={{ priority: 'Priority', fairnessKey: 'Fairness key (optional)' }}
          priority={priority}
          setPriority={setPriority}
          fairnessKey={fairnessKey}
          setFairnessKey={setFairnessKey}
        />
        <label for="run-webhook">Webhook URL (optional)</label>
        <input
          id="run-webhook"
          type="url"
          value={webhookUrl}
          placeholder="https://example.com/hooks/baton"
          onInput={(e) => setWebhookUrl(e.currentTarget.value)}
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
