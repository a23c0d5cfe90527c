import type { BatonClient } from '@baton/client';
import type { RunSnapshot } from '@baton/protocol';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { DecisionForm, type DecisionChoice } from './decision-form.tsx';
import { describeError, handleAuth } from './errors.ts';
import { EMPTY_VIEW, foldEvent, type RunView } from './run-timeline.ts';

type Connection =
  | { state: 'connecting' | 'live' | 'ended' }
  | { state: 'reconnecting'; attempt: number }
  | { state: 'failed'; message: string };

function connectionText(c: Connection): string {
  switch (c.state) {
    case 'connecting':
      return 'connecting…';
    case 'live':
      return 'live';
    case 'ended':
      return 'stream ended';
    case 'reconnecting':
      return `reconnecting (attempt ${c.attempt})…`;
    case 'failed':
      return `disconnected: ${c.message}`;
  }
}

/** One run, live: status, what it waits for, assistant text, tool calls and the event timeline. */
export function RunPage({
  client,
  runId,
  onUnauthorized,
}: {
  client: BatonClient;
  runId: string;
  onUnauthorized: () => void;
}) {
  const [view, setView] = useState<RunView>(EMPTY_VIEW);
  const [snapshot, setSnapshot] = useState<RunSnapshot | null>(null);
  const [connection, setConnection] = useState<Connection>({ state: 'connecting' });
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  const lastSeq = useRef(0);

  const refresh = useCallback(async (): Promise<void> => {
    try {
      const next = await client.runs.get(runId);
      // Answers can arrive out of order; an older snapshot must not hide a newer wait.
      setSnapshot((old) => (old && old.lastSeq > next.lastSeq ? old : next));
    } catch (e) {
      if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
    }
  }, [client, runId]);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  useEffect(() => {
    const controller = new AbortController();
    setConnection({ state: 'connecting' });
    void (async () => {
      try {
        const stream = client.runs.stream(runId, {
          after: lastSeq.current,
          signal: controller.signal,
          // A console left open should ride out any API restart or network blip.
          reconnect: { maxAttempts: Infinity, maxElapsedMs: Infinity },
          onReconnect: (info) => setConnection({ state: 'reconnecting', attempt: info.attempt }),
        });
        for await (const event of stream) {
          lastSeq.current = event.seq;
          setConnection({ state: 'live' });
          setView((v) => foldEvent(v, event));
          if (
            event.type === 'run.finished' ||
            event.type === 'decision.applied' ||
            event.type === 'tool_call.suspended'
          )
            void refresh();
        }
        setConnection({ state: 'ended' });
        void refresh();
      } catch (e) {
        if (controller.signal.aborted) return;
        if (handleAuth(e, onUnauthorized)) return;
        setConnection({ state: 'failed', message: describeError(e) });
      }
    })();
    return () => controller.abort();
  }, [client, runId, generation]);

  const decide = async (toolCallId: string, choice: DecisionChoice): Promise<string | null> => {
    try {
      await client.runs.decide(runId, { toolCallId, ...choice });
      await refresh();
      return null;
    } catch (e) {
      if (handleAuth(e, onUnauthorized)) return null;
      return describeError(e);
    }
  };

  const cancel = async (): Promise<void> => {
    try {
      await client.runs.cancel(runId);
      await refresh();
    } catch (e) {
      if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
    }
  };

  const status = view.status ?? snapshot?.status ?? null;
  const awaited =
    status === 'waiting' && snapshot?.status === 'waiting' ? (snapshot.await?.calls ?? []) : [];

  return (
    <section>
      <div class="title-row">
        <h1 tabIndex={-1}>
          Run <span class="mono">{runId}</span>
        </h1>
        {status !== 'done' && status !== null && (
          <button type="button" class="deny" onClick={() => void cancel()}>
            Cancel run
          </button>
        )}
      </div>
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd aria-live="polite" data-testid="run-status">
            <span class={`badge ${status ?? ''}`}>{status ?? '…'}</span>
            {view.termination && <span> ({view.termination.kind})</span>}
          </dd>
        </div>
        <div>
          <dt>Agent</dt>
          <dd>{view.agent ?? snapshot?.agent ?? '…'}</dd>
        </div>
        <div>
          <dt>Events</dt>
          <dd>{view.lastSeq}</dd>
        </div>
        <div>
          <dt>Stream</dt>
          <dd aria-live="polite">
            {connectionText(connection)}
            {connection.state === 'failed' && (
              <button type="button" class="link" onClick={() => setGeneration((g) => g + 1)}>
                Reconnect
              </button>
            )}
          </dd>
        </div>
      </dl>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}

      {awaited.length > 0 && (
        <section class="waiting" aria-labelledby="waiting-title">
          <h2 id="waiting-title">Waiting for a decision</h2>
          {awaited.map((call) => (
            <DecisionForm
              key={call.toolCallId}
              call={call}
              onDecide={(choice) => decide(call.toolCallId, choice)}
            />
          ))}
        </section>
      )}

      <section aria-labelledby="assistant-title">
        <h2 id="assistant-title">Assistant</h2>
        {view.texts.length === 0 ? (
          <p class="muted">No text yet.</p>
        ) : (
          view.texts.map((t) => (
            <p key={t.messageId} class={`assistant${t.streaming ? ' streaming' : ''}`}>
              <span class="muted">step {t.step} · </span>
              {t.text}
            </p>
          ))
        )}
      </section>

      <section aria-labelledby="tools-title">
        <h2 id="tools-title">Tool calls</h2>
        {view.toolCalls.length === 0 ? (
          <p class="muted">None yet.</p>
        ) : (
          <ul class="tools">
            {view.toolCalls.map((c) => (
              <li key={c.toolCallId} data-testid={`tool-${c.toolName}`}>
                <strong>{c.toolName}</strong> <span class="muted mono">{c.toolCallId}</span>
                <div class="transitions" aria-label="status transitions">
                  {c.statuses.map((s, i) => (
                    <span key={i}>
                      {i > 0 && ' → '}
                      <span class={`badge ${s}`}>{s}</span>
                    </span>
                  ))}
                </div>
                <pre class="args">{JSON.stringify(c.arguments)}</pre>
                {c.outcome && (
                  <pre class="args">
                    {c.outcome.status}:{' '}
                    {JSON.stringify(c.outcome.output ?? c.outcome.error ?? null)}
                  </pre>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <ol class="timeline">
          {view.timeline.map((e) => (
            <li key={e.seq}>
              <span class="seq mono">#{e.seq}</span>{' '}
              <time dateTime={new Date(e.at).toISOString()}>
                {new Date(e.at).toLocaleTimeString()}
              </time>{' '}
              <span class="type mono">{e.type}</span> {e.summary}
            </li>
          ))}
        </ol>
      </section>
    </section>
  );
}
