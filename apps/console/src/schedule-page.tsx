import type { BatonClient } from '@baton/client';
import type { RunSummary, Schedule, ScheduleDetail } from '@baton/protocol';
import { useState } from 'preact/hooks';
import { describeError, handleAuth } from './errors.ts';
import { usePolling } from './use-polling.ts';
import { href, navigate } from './route.ts';
import { cadenceText, scheduleLabel } from './schedule-text.ts';
import { PauseResume } from './schedules-page.tsx';

function time(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toLocaleString();
}

/** One schedule: what it runs and when, pause/resume/delete, its latest firings and its runs. */
export function SchedulePage({
  client,
  scheduleId,
  onUnauthorized,
}: {
  client: BatonClient;
  scheduleId: string;
  onUnauthorized: () => void;
}) {
  const [schedule, setSchedule] = useState<ScheduleDetail | null>(null);
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const fail = (e: unknown): void => {
    if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
  };

  usePolling(
    async (signal) => {
      const [detail, page] = await Promise.all([
        client.schedules.get(scheduleId, { signal }),
        client.schedules.runs(scheduleId, { limit: 50 }, { signal }),
      ]);
      setSchedule(detail);
      setRuns(page.runs);
      setError(null);
    },
    fail,
    [client, scheduleId],
  );

  const changed = (next: Schedule): void =>
    setSchedule((old) => (old ? { ...old, ...next } : null));

  const remove = async (): Promise<void> => {
    if (!window.confirm('Delete this schedule? The runs it created stay.')) return;
    try {
      await client.schedules.delete(scheduleId);
      navigate({ page: 'schedules' });
    } catch (e) {
      fail(e);
    }
  };

  const message = schedule?.input.messages.at(-1)?.content;
  return (
    <section>
      <div class="title-row">
        <h1 tabIndex={-1}>
          Schedule <span class="mono">{schedule ? scheduleLabel(schedule) : scheduleId}</span>
        </h1>
        {schedule && (
          <div class="actions">
            <PauseResume client={client} schedule={schedule} onChanged={changed} onError={fail} />
            <button type="button" class="deny small" onClick={() => void remove()}>
              Delete
            </button>
          </div>
        )}
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {schedule && (
        <dl class="facts">
          <div>
            <dt>State</dt>
            <dd data-testid="schedule-state">
              <span class={`badge ${schedule.state}`}>{schedule.state}</span>
              {schedule.completedReason && <span> ({schedule.completedReason})</span>}
            </dd>
          </div>
          <div>
            <dt>Agent</dt>
            <dd>{schedule.agent}</dd>
          </div>
          <div>
            <dt>When</dt>
            <dd>{cadenceText(schedule)}</dd>
          </div>
          <div>
            <dt>Next firing</dt>
            <dd>{time(schedule.nextFireAt)}</dd>
          </div>
          <div>
            <dt>Firings</dt>
            <dd>
              {schedule.firings}
              {schedule.limit !== undefined ? ` of ${schedule.limit}` : ''}
            </dd>
          </div>
          {schedule.threadId !== undefined && (
            <div>
              <dt>Thread</dt>
              <dd>
                <a
                  class="mono"
                  href={href({ page: 'runs', filters: { thread: schedule.threadId } })}
                  title="Runs of this thread"
                >
                  {schedule.threadId}
                </a>
              </dd>
            </div>
          )}
        </dl>
      )}
      {message !== undefined && (
        <p class="assistant">
          <span class="muted">message · </span>
          {typeof message === 'string' ? message : JSON.stringify(message)}
        </p>
      )}

      <section aria-labelledby="schedule-runs-title">
        <h2 id="schedule-runs-title">Runs</h2>
        {runs === null ? (
          <p class="muted">Loading…</p>
        ) : runs.length === 0 ? (
          <p class="muted">No run yet.</p>
        ) : (
          <table class="runs">
            <caption class="sr-only">Runs this schedule created, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.runId}>
                  <td data-label="Run">
                    <a href={href({ page: 'run', runId: r.runId })}>{r.runId}</a>
                  </td>
                  <td data-label="Status">
                    <span class={`badge ${r.status}`}>{r.status}</span>
                  </td>
                  <td data-label="Created">{time(r.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      {schedule && schedule.recentFirings.length > 0 && (
        <section aria-labelledby="firings-title">
          <h2 id="firings-title">Latest firings</h2>
          <ol class="timeline">
            {schedule.recentFirings.map((f) => (
              <li key={f.scheduledFor}>
                <time dateTime={new Date(f.firedAt).toISOString()}>{time(f.firedAt)}</time>{' '}
                <span class="type mono">{f.outcome}</span>{' '}
                {f.runId !== undefined && (
                  <a class="mono" href={href({ page: 'run', runId: f.runId })}>
                    {f.runId}
                  </a>
                )}
                {f.error && (
                  <span class="error">
                    {' '}
                    {f.error.code}: {f.error.message}
                  </span>
                )}
              </li>
            ))}
          </ol>
        </section>
      )}
    </section>
  );
}
