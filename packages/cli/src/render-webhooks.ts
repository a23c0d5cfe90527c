import type { RunWebhooksResponse, WebhookAttempt } from '@baton/protocol';
import { when, type Style } from './render.ts';

function attemptText(a: WebhookAttempt): string {
  const answer = a.statusCode !== undefined ? `HTTP ${String(a.statusCode)}` : (a.error ?? '-');
  const retry = a.nextRetryAt !== undefined ? `, retry at ${when(a.nextRetryAt)}` : '';
  return `#${String(a.attempt)} ${when(a.at)} ${answer} (${String(Math.round(a.durationMs))} ms${retry})`;
}

/** `webhooks`: a run's endpoints and its delivery log, attempt by attempt. */
export function renderWebhooks(log: RunWebhooksResponse, s: Style): string {
  if (log.endpoints.length === 0 && log.deliveries.length === 0)
    return s.dim(`no webhook for run ${log.runId}`) + '\n';
  const lines = log.endpoints.map(
    (e) => `${s.bold(e.endpoint)} ${e.url}  ${s.dim(e.events.join(','))}`,
  );
  if (log.deliveries.length === 0) lines.push(s.dim('nothing sent yet'));
  for (const d of log.deliveries) {
    const color =
      d.status === 'delivered'
        ? s.green
        : d.status === 'pending' || d.status === 'retrying'
          ? s.yellow
          : s.red;
    lines.push(
      `${d.type.padEnd(18)} seq ${String(d.seq).padEnd(4)} ${d.endpoint.padEnd(6)} ${color(d.status)}  ${s.dim(d.webhookId)}`,
    );
    for (const a of d.attempts) lines.push(`  ${attemptText(a)}`);
  }
  return lines.join('\n') + '\n';
}
