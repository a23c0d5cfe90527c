import type { BatonClient } from '@baton/client';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { KeyForm } from './key-form.tsx';
import { NewRunPage } from './new-run-page.tsx';
import { RUNS, href, useRoute } from './route.ts';
import { RunPage } from './run-page.tsx';
import { RunsPage } from './runs-page.tsx';
import { SchedulePage } from './schedule-page.tsx';
import { SchedulesPage } from './schedules-page.tsx';
import { adoptReadOnlyLink, clientFor, forgetKey, storeKey, storedKey } from './session.ts';

export function App() {
  // Before the key is read: a read-only link brings its own (a run token).
  const [readOnly, setReadOnly] = useState(adoptReadOnlyLink);
  const [key, setKey] = useState(storedKey);
  const client = useMemo<BatonClient | null>(() => (key ? clientFor(key) : null), [key]);
  const route = useRoute();
  const main = useRef<HTMLElement>(null);

  // A page change moves focus to the new page's content, as a screen reader user expects; a
  // filter change stays on the page (focus stays on the filter).
  const pageKey = route.page === 'runs' ? 'runs' : href(route);
  useEffect(() => {
    main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [pageKey, key]);

  const signOut = (): void => {
    forgetKey();
    setKey(null);
    setReadOnly(false);
  };

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href(RUNS)}>
          Baton console
        </a>
        {client && readOnly && (
          <nav aria-label="Main">
            <span class="muted">Read-only link</span>
            <button type="button" class="link" onClick={signOut}>
              Forget link
            </button>
          </nav>
        )}
        {client && !readOnly && (
          <nav aria-label="Main">
            <a href={href(RUNS)} aria-current={route.page === 'runs' ? 'page' : undefined}>
              Runs
            </a>
            <a
              href={href({ page: 'schedules' })}
              aria-current={
                route.page === 'schedules' || route.page === 'schedule' ? 'page' : undefined
              }
            >
              Schedules
            </a>
            <a
              href={href({ page: 'new' })}
              aria-current={route.page === 'new' ? 'page' : undefined}
            >
              New run
            </a>
            <button type="button" class="link" onClick={signOut}>
              Forget key
            </button>
          </nav>
        )}
      </header>
      <main id="main" ref={main}>
        {!client ? (
          <KeyForm
            onKey={(k) => {
              storeKey(k);
              setKey(k);
            }}
          />
        ) : route.page === 'run' ? (
          <RunPage
            key={route.runId}
            client={client}
            runId={route.runId}
            readOnly={readOnly}
            onUnauthorized={signOut}
          />
        ) : route.page === 'new' ? (
          <NewRunPage client={client} onUnauthorized={signOut} />
        ) : route.page === 'schedules' ? (
          <SchedulesPage client={client} onUnauthorized={signOut} />
        ) : route.page === 'schedule' ? (
          <SchedulePage
            key={route.scheduleId}
            client={client}
            scheduleId={route.scheduleId}
            onUnauthorized={signOut}
          />
        ) : (
          <RunsPage client={client} filters={route.filters} onUnauthorized={signOut} />
        )}
      </main>
    </>
  );
}
