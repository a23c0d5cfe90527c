import type { BatonClient } from '@baton/client';
import type { Schedule } from '@baton/protocol';
import { useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { usePolling } from './use-polling.ts';
import { href } from './route.ts';
import { cadenceText, scheduleLabel } from './schedule-text.ts';
import { ScheduleForm } from './schedule-form.tsx';

/** Pause or resume, whichever the schedule's state allows; a completed one has neither. */
export function PauseResume({
  client,
  schedule,
  onChanged,
  onError,
}: {
  client: BatonClient;
  schedule: Pick<Schedule, 'scheduleId' | 'state' | 'name'>;
  onChanged: (next: Schedule) => void;
  onError: (e: unknown) => void;
}) {
  const [busy, setBusy] = useState(false);
  if (schedule.state === 'completed') return null;
  const pausing = schedule.state === 'active';
  const act = async (): Promise<void> => {
    setBusy(true);
    try {
      onChanged(
        pausing
          ? await client.schedules.pause(schedule.scheduleId)
          : await client.schedules.resume(schedule.scheduleId),
      );
    } catch (e) {
      onError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button
      type="button"
      class={pausing ? 'deny small' : 'approve small'}
      disabled={busy}
      aria-label={`${pausing ? 'Pause' : 'Resume'} ${scheduleLabel(schedule)}`}
      onClick={() => void act()}
    >
      {pausing ? 'Pause' : 'Resume'}
    </button>
  );
}

/** The tenant's schedules: cadence, state, next firing; pause and resume from the list. */
export function SchedulesPage({
  client,
  onUnauthorized,
}: {
  client: BatonClient;
  onUnauthorized: () => void;
}) {
  const [schedules, setSchedules] = useState<Schedule[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [more, setMore] = useState<string | null>(null);

  const fail = (e: unknown): void => {
    if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
  };

  usePolling(
    async (signal) => {
      const page = await client.schedules.list(
        { limit: 50, ...(cursor ? { cursor } : {}) },
        { signal },
      );
      setSchedules(page.schedules);
      setMore(page.nextCursor);
      setError(null);
    },
    fail,
    [client, cursor],
  );

  const replace = (next: Schedule): void =>
    setSchedules((list) => list?.map((s) => (s.scheduleId === next.scheduleId ? next : s)) ?? null);

  return (
    <section>
      <h1 tabIndex={-1}>Schedules</h1>
      <ScheduleForm client={client} onUnauthorized={onUnauthorized} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {schedules === null && !error && <p class="muted">Loading…</p>}
      {schedules && schedules.length === 0 && (
        <p>
          No schedules. Create one above, with <span class="mono">baton schedules create</span> or{' '}
          <span class="mono">POST /v1/schedules</span>.
        </p>
      )}
      {schedules && schedules.length > 0 && (
        <table class="runs">
          <caption class="sr-only">Schedules, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Schedule</th>
              <th scope="col">Agent</th>
              <th scope="col">When</th>
              <th scope="col">State</th>
              <th scope="col">Next</th>
              <th scope="col">Firings</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {schedules.map((s) => (
              <tr key={s.scheduleId}>
                <td data-label="Schedule">
                  <a href={href({ page: 'schedule', scheduleId: s.scheduleId })}>
                    {scheduleLabel(s)}
                  </a>
                </td>
                <td data-label="Agent">{s.agent}</td>
                <td data-label="When">{cadenceText(s)}</td>
                <td data-label="State">
                  <span class={`badge ${s.state}`}>{s.state}</span>
                </td>
                <td data-label="Next">
                  {s.nextFireAt === null ? '-' : new Date(s.nextFireAt).toLocaleString()}
                </td>
                <td data-label="Firings">{s.firings}</td>
                <td data-label="Actions">
                  <PauseResume client={client} schedule={s} onChanged={replace} onError={fail} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="actions">
        {cursor && (
          <button type="button" class="link" onClick={() => setCursor(null)}>
            First page
          </button>
        )}
        {more && (
          <button type="button" class="link" onClick={() => setCursor(more)}>
            Next page
          </button>
        )}
      </div>
    </section>
  );
}
