import type { BatonClient } from '@baton/client';
import type { AwaitedToolCall, RunView as RunSnapshot } from '@baton/protocol';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { DecisionForm, type DecisionChoice } from './decision-form.tsx';
import { describeError, handleAuth } from './errors.ts';
import { href, navigate } from './route.ts';
import { EMPTY_VIEW, foldEvent, type RunView } from './run-timeline.ts';
import { RunTree } from './run-tree.tsx';
import { WebhookLog } from './webhook-log.tsx';

/** How often a run page re-reads the tree while a descendant is still working. */
const TREE_POLL_MS = 2_000;

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

/**
 * One run, live: status, its run tree, every call the tree waits on (its own and its
 * descendants', decided from here), assistant text, tool calls, webhooks and the event timeline.
 */
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
  const [tick, setTick] = useState(0);
  const lastSeq = useRef(0);
  const asked = useRef(0);

  const refresh = useCallback(async (): Promise<void> => {
    const order = ++asked.current;
    try {
      const next = await client.runs.get(runId);
      // Answers can arrive out of order; an older snapshot must not hide a newer wait. A
      // descendant's wait changes nothing in this run's log, so the order of asking decides.
      setSnapshot((old) =>
        old &&
        (old.lastSeq > next.lastSeq || (order < asked.current && old.lastSeq === next.lastSeq))
          ? old
          : next,
      );
      setTick((t) => t + 1);
    } catch (e) {
      if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
    }
  }, [client, runId]);

  // A child's progress (it suspends, it is decided) is in its own log, not in this run's
  // stream: while a descendant works, the page re-reads the run's view.
  const treeActive =
    snapshot !== null &&
    snapshot.status !== 'done' &&
    (snapshot.childRuns ?? []).some((c) => c.status !== 'done');
  useEffect(() => {
    if (!treeActive) return;
    const timer = setInterval(() => void refresh(), TREE_POLL_MS);
    return () => clearInterval(timer);
  }, [treeActive, refresh]);

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
            // A run that waited for a slot of its fairness key has one now.
            event.type === 'run.started' ||
            event.type === 'decision.applied' ||
            event.type === 'tool_call.suspended' ||
            event.type === 'child_run.linked' ||
            event.type === 'child_run.finished'
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

  // Sent to this run even for a descendant's call: the API routes it to the run named in `runId`.
  const decide = async (call: AwaitedToolCall, choice: DecisionChoice): Promise<string | null> => {
    try {
      await client.runs.decide(runId, {
        toolCallId: call.toolCallId,
        ...(call.runId !== undefined ? { runId: call.runId } : {}),
        ...choice,
      });
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

  const [forkMessage, setForkMessage] = useState('');
  // A fork starts after the event; with a message it continues from there (a step boundary or
  // the run's end), and the API says which events take one.
  const fork = async (atSeq: number): Promise<void> => {
    try {
      const message = forkMessage.trim();
      const forked = await client.runs.fork(runId, {
        atSeq,
        ...(message === '' ? {} : { input: { messages: [{ role: 'user', content: message }] } }),
      });
      navigate({ page: 'run', runId: forked.runId });
    } catch (e) {
      if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
    }
  };

  const replay = async (): Promise<void> => {
    try {
      const replayed = await client.runs.replay(runId);
      navigate({ page: 'run', runId: replayed.runId });
    } catch (e) {
      if (!handleAuth(e, onUnauthorized)) setError(describeError(e));
    }
  };

  const status = view.status ?? snapshot?.status ?? null;
  const replayable =
    status === 'done' &&
    (view.termination?.kind === 'error' || view.termination?.kind === 'cancelled');
  // The run's own calls wait while the stream says it waits. A parent whose child waits is itself
  // `running`: its view's `await` lists the descendants' calls (each with the run holding it).
  const awaited = (snapshot?.await?.calls ?? []).filter((call) =>
    call.runId === undefined ? status === 'waiting' : status !== 'done',
  );

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
        {replayable && (
          <button type="button" onClick={() => void replay()}>
            Replay run
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
        {snapshot && (
          <div>
            <dt>Thread</dt>
            <dd>
              <a
                class="mono"
                href={href({ page: 'runs', filters: { thread: snapshot.threadId } })}
                title="Runs of this thread"
              >
                {snapshot.threadId}
              </a>
            </dd>
          </div>
        )}
        {snapshot?.agentVersion !== undefined && (
          <div>
            <dt>Version</dt>
            <dd class="mono" data-testid="run-agent-version">
              {snapshot.agentVersion}
            </dd>
          </div>
        )}
        {snapshot?.fairnessKey !== undefined && (
          <div>
            <dt>Fairness</dt>
            <dd>
              <a
                class="mono"
                href={href({ page: 'runs', filters: { key: snapshot.fairnessKey } })}
                title="Runs of this fairness key"
              >
                {snapshot.fairnessKey}
              </a>
              {snapshot.priority !== undefined && <span> · priority {snapshot.priority}</span>}
            </dd>
          </div>
        )}
        {snapshot?.queued !== undefined && status !== 'done' && (
          <div>
            <dt>Queued</dt>
            <dd data-testid="run-queued">
              {snapshot.queued.reason === 'version_unavailable' ? (
                'no live worker serves its agent version; it resumes when one starts'
              ) : (
                <>
                  {snapshot.queued.position} of {snapshot.queued.backlog} waiting for a slot (
                  {snapshot.queued.reason.replaceAll('_', ' ')}; {snapshot.queued.inProgress}
                  {snapshot.queued.limit !== undefined ? ` of ${snapshot.queued.limit}` : ''} in
                  progress)
                </>
              )}
            </dd>
          </div>
        )}
        {snapshot?.origin !== undefined && (
          <div>
            <dt>{snapshot.origin.kind === 'fork' ? 'Forked from' : 'Replay of'}</dt>
            <dd data-testid="run-origin">
              <a class="mono" href={href({ page: 'run', runId: snapshot.origin.runId })}>
                {snapshot.origin.runId}
              </a>{' '}
              after #{snapshot.origin.atSeq}
            </dd>
          </div>
        )}
        {snapshot?.scheduleId !== undefined && (
          <div>
            <dt>Schedule</dt>
            <dd>
              <a class="mono" href={href({ page: 'schedule', scheduleId: snapshot.scheduleId })}>
                {snapshot.scheduleId}
              </a>
            </dd>
          </div>
        )}
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
              key={`${call.runId ?? runId}/${call.toolCallId}`}
              call={call}
              onDecide={(choice) => decide(call, choice)}
            />
          ))}
        </section>
      )}

      {snapshot && (
        <RunTree client={client} run={snapshot} tick={tick} onUnauthorized={onUnauthorized} />
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
                {(snapshot?.childRuns ?? [])
                  .filter((child) => child.toolCallId === c.toolCallId)
                  .map((child) => (
                    <p key={child.childRunId} class="muted">
                      runs as child run{' '}
                      <a class="mono" href={href({ page: 'run', runId: child.childRunId })}>
                        {child.childRunId}
                      </a>
                    </p>
                  ))}
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

      <WebhookLog client={client} runId={runId} onUnauthorized={onUnauthorized} />

      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <label class="fork-message">
          Message for a fork (optional){' '}
          <input
            type="text"
            value={forkMessage}
            onInput={(e) => setForkMessage((e.target as HTMLInputElement).value)}
            placeholder="continue with…"
          />
        </label>
        <ol class="timeline">
          {view.timeline.map((e) => (
            <li key={e.seq}>
              <span class="seq mono">#{e.seq}</span>{' '}
              <time dateTime={new Date(e.at).toISOString()}>
                {new Date(e.at).toLocaleTimeString()}
              </time>{' '}
              <span class="type mono">{e.type}</span> {e.summary}{' '}
              <button
                type="button"
                class="link"
                title={`A new run from this run's state after event #${e.seq}`}
                onClick={() => void fork(e.seq)}
              >
                Fork here
              </button>
            </li>
          ))}
        </ol>
      </section>
    </section>
  );
}
