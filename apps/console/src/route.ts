import { useEffect, useState } from 'preact/hooks';

/** Pages of the console; the hash keeps them static-file friendly (#/runs/ID). */
export type Route =
  | { readonly page: 'runs' }
  | { readonly page: 'new' }
  | { readonly page: 'run'; readonly runId: string };

function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '');
  const run = /^\/runs\/([^/]+)$/.exec(path);
  if (run) return { page: 'run', runId: decodeURIComponent(run[1]!) };
  if (path === '/new') return { page: 'new' };
  return { page: 'runs' };
}

export function href(route: Route): string {
  switch (route.page) {
    case 'runs':
      return '#/';
    case 'new':
      return '#/new';
    case 'run':
      return `#/runs/${encodeURIComponent(route.runId)}`;
  }
}

export function navigate(route: Route): void {
  window.location.hash = href(route);
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
