import type { RunStatus } from '@baton/protocol';
import { useEffect, useState } from 'preact/hooks';

/** The runs list's filters, kept in the URL so a filtered list can be linked and reloaded. */
export interface RunFilters {
  readonly status?: RunStatus;
  readonly agent?: string;
  readonly thread?: string;
  /** Fairness key (a run without one has its tenant's). */
  readonly key?: string;
  /** 'queued': only runs waiting for a slot of their tenant or fairness key. */
  readonly admission?: 'queued';
}

/** Pages of the console; the hash keeps them static-file friendly (#/runs/ID). */
export type Route =
  | { readonly page: 'runs'; readonly filters: RunFilters }
  | { readonly page: 'new' }
  | { readonly page: 'run'; readonly runId: string }
  | { readonly page: 'schedules' }
  | { readonly page: 'schedule'; readonly scheduleId: string };

const STATUSES: ReadonlySet<string> = new Set(['created', 'running', 'waiting', 'done']);

function parseFilters(query: string): RunFilters {
  const params = new URLSearchParams(query);
  const status = params.get('status');
  const agent = params.get('agent');
  const thread = params.get('thread');
  const key = params.get('key');
  const admission = params.get('admission');
  return {
    ...(admission === 'queued' ? { admission } : {}),
    ...(status && STATUSES.has(status) ? { status: status as RunStatus } : {}),
    ...(agent ? { agent } : {}),
    ...(thread ? { thread } : {}),
    ...(key ? { key } : {}),
  };
}

function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?', 2);
  const run = /^\/runs\/([^/]+)$/.exec(path);
  if (run) return { page: 'run', runId: decodeURIComponent(run[1]!) };
  const schedule = /^\/schedules\/([^/]+)$/.exec(path);
  if (schedule) return { page: 'schedule', scheduleId: decodeURIComponent(schedule[1]!) };
  if (path === '/schedules') return { page: 'schedules' };
  if (path === '/new') return { page: 'new' };
  return { page: 'runs', filters: parseFilters(query) };
}

export function href(route: Route): string {
  switch (route.page) {
    case 'runs': {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(route.filters)) if (v) params.set(k, v as string);
      const query = params.toString();
      return query ? `#/?${query}` : '#/';
    }
    case 'new':
      return '#/new';
    case 'run':
      return `#/runs/${encodeURIComponent(route.runId)}`;
    case 'schedules':
      return '#/schedules';
    case 'schedule':
      return `#/schedules/${encodeURIComponent(route.scheduleId)}`;
  }
}

/** The unfiltered runs list. */
export const RUNS: Route = { page: 'runs', filters: {} };

/** `replace`: no history entry (a filter change is not a page a person goes back to). */
export function navigate(route: Route, opts: { replace?: boolean } = {}): void {
  if (opts.replace) window.location.replace(href(route));
  else window.location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
