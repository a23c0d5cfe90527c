import type { BatonClient } from '@baton/client';
import { DEFAULT_PRIORITY } from '@baton/protocol';
import { useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { navigate } from './route.ts';
import { AdmissionFields, admissionOptions, useAgents } from './run-options-fields.tsx';

/**
 * Creates a schedule (POST /v1/schedules): an agent and its message, fired every N seconds or
 * at a cron expression in a time zone, with the run options a run of it gets (priority,
 * fairness key). The API validates; its message is shown as it says it.
 */
export function ScheduleForm({
  client,
  onUnauthorized,
}: {
  client: BatonClient;
  onUnauthorized: () => void;
}) {
  const [name, setName] = useState('');
  const [message, setMessage] = useState('');
  const [kind, setKind] = useState<'every' | 'cron'>('every');
  const [everySeconds, setEverySeconds] = useState('3600');
  const [cron, setCron] = useState('0 9 * * 1-5');
  const [timezone, setTimezone] = useState('UTC');
  const [priority, setPriority] = useState(DEFAULT_PRIORITY);
  const [fairnessKey, setFairnessKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const { agents, agent, setAgent } = useAgents(client, onUnauthorized, setError);

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const created = await client.schedules.create({
        agent,
        input: { messages: [{ role: 'user', content: message }] },
        ...(name.trim() ? { name: name.trim() } : {}),
        ...(kind === 'every'
          ? { everyMs: Math.round(Number(everySeconds) * 1000) }
          : { cron: cron.trim(), ...(timezone.trim() ? { timezone: timezone.trim() } : {}) }),
        options: admissionOptions(priority, fairnessKey),
      });
      navigate({ page: 'schedule', scheduleId: created.scheduleId });
    } catch (err) {
      if (!handleAuth(err, onUnauthorized)) setError(describeError(err));
      setBusy(false);
    }
  };

  return (
    <details class="card narrow" data-testid="schedule-form">
      <summary>Create a schedule</summary>
      <form onSubmit={(e) => void submit(e)} aria-label="Create a schedule">
        <label for="schedule-name">Name (optional)</label>
        <input id="schedule-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="schedule-agent">Agent</label>
        <select
          id="schedule-agent"
          required
          value={agent}
          onChange={(e) => setAgent(e.currentTarget.value)}
        >
          {(agents ?? []).map((a) => (
            <option key={a.name} value={a.name}>
              {a.name}
            </option>
          ))}
        </select>
        <label for="schedule-message">Message</label>
        <textarea
          id="schedule-message"
          required
          rows={2}
          value={message}
          onInput={(e) => setMessage(e.currentTarget.value)}
        />
        <label for="schedule-kind">Fires</label>
        <select
          id="schedule-kind"
          value={kind}
          onChange={(e) => setKind(e.currentTarget.value === 'cron' ? 'cron' : 'every')}
        >
          <option value="every">every N seconds</option>
          <option value="cron">at a cron expression</option>
        </select>
        {kind === 'every' ? (
          <>
            <label for="schedule-every">Every (seconds, at least 1)</label>
            <input
              id="schedule-every"
              type="number"
              min="1"
              required
              value={everySeconds}
              onInput={(e) => setEverySeconds(e.currentTarget.value)}
            />
          </>
        ) : (
          <>
            <label for="schedule-cron">Cron expression</label>
            <input
              id="schedule-cron"
              class="mono"
              required
              value={cron}
              onInput={(e) => setCron(e.currentTarget.value)}
            />
            <label for="schedule-timezone">Time zone</label>
            <input
              id="schedule-timezone"
              value={timezone}
              placeholder="UTC, Europe/Oslo…"
              onInput={(e) => setTimezone(e.currentTarget.value)}
            />
          </>
        )}
        <AdmissionFields
          idPrefix="schedule"
          labels={{
            priority: 'Priority of its runs',
            fairnessKey: 'Fairness key of its runs (optional)',
          }}
          priority={priority}
          setPriority={setPriority}
          fairnessKey={fairnessKey}
          setFairnessKey={setFairnessKey}
        />
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || !agent}>
          {busy ? 'Creating…' : 'Create schedule'}
        </button>
      </form>
    </details>
  );
}
