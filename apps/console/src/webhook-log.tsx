import type { BatonClient } from '@baton/client';
import type { RunWebhooksResponse, WebhookAttempt } from '@baton/protocol';
import { useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { usePolling } from './use-polling.ts';

function attemptText(a: WebhookAttempt): string {
  const answer = a.statusCode !== undefined ? `HTTP ${a.statusCode}` : (a.error ?? 'no answer');
  const retry =
    a.nextRetryAt !== undefined ? `, retry at ${new Date(a.nextRetryAt).toLocaleTimeString()}` : '';
  return `#${a.attempt} ${new Date(a.at).toLocaleTimeString()}: ${answer} (${Math.round(a.durationMs)} ms${retry})`;
}

/**
 * The run's webhook endpoints (never their secrets) and its delivery log, attempt by attempt.
 * Deliveries go on after the run ends (retries), so the log keeps refreshing while it is open.
 */
export function WebhookLog({
  client,
  runId,
  onUnauthorized,
}: {
  client: BatonClient;
  runId: string;
  onUnauthorized: () => void;
}) {
  const [log, setLog] = useState<RunWebhooksResponse | null>(null);
  const [error, setError] = useState<string | null>(null);

  usePolling(
    async (signal) => {
      setLog(await client.runs.webhooks(runId, { signal }));
      setError(null);
    },
    (e) => {
      if (handleAuth(e, onUnauthorized)) return true;
      setError(describeError(e));
    },
    [client, runId],
  );

  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhooks</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {log === null ? (
        !error && <p class="muted">Loading…</p>
      ) : log.endpoints.length === 0 && log.deliveries.length === 0 ? (
        <p class="muted">No webhook for this run.</p>
      ) : (
        <>
          <ul class="plain">
            {log.endpoints.map((e) => (
              <li key={e.endpoint}>
                <strong>{e.endpoint}</strong> <span class="mono">{e.url}</span>{' '}
                <span class="muted">({e.events.join(', ')})</span>
              </li>
            ))}
          </ul>
          {log.deliveries.length === 0 ? (
            <p class="muted">Nothing sent yet.</p>
          ) : (
            <table class="runs" data-testid="webhook-deliveries">
              <caption class="sr-only">Webhook deliveries, oldest first</caption>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Endpoint</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                </tr>
              </thead>
              <tbody>
                {log.deliveries.map((d) => (
                  <tr key={`${d.endpoint}-${d.webhookId}`}>
                    <td data-label="Event">
                      {d.type} <span class="muted">#{d.seq}</span>
                    </td>
                    <td data-label="Endpoint">{d.endpoint}</td>
                    <td data-label="Status">
                      <span class={`badge ${d.status}`}>{d.status}</span>
                    </td>
                    <td data-label="Attempts">
                      {d.attempts.length === 0
                        ? 'none yet'
                        : d.attempts.map((a) => <div key={a.attempt}>{attemptText(a)}</div>)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
