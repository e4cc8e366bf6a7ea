import { useEffect, useState } from 'preact/hooks';
import { Config, getJSON, HTTPError } from './api';
import { JobsPage } from './jobs';
import { JobPage } from './job';

// Routes live in the #fragment, so every page has an address to bookmark
// or share, and the server serves one page for all of them:
//   #/jobs?namespace=ns   #/jobs?all=1
//   #/job/ns/name         #/job/ns/name?log=pod&container=c
export type Route =
  | { page: 'jobs'; namespace?: string; all: boolean }
  | { page: 'job'; namespace: string; name: string; log?: string; container?: string };

export function parseRoute(hash: string): Route {
  const [path, query = ''] = hash.replace(/^#/, '').split('?');
  const q = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'job' && parts.length === 3) {
    return { page: 'job', namespace: parts[1], name: parts[2], log: q.get('log') ?? undefined, container: q.get('container') ?? undefined };
  }
  return { page: 'jobs', namespace: q.get('namespace') ?? undefined, all: q.get('all') === '1' };
}

export function href(r: Route): string {
  if (r.page === 'job') {
    const q = new URLSearchParams();
    if (r.log) q.set('log', r.log);
    if (r.container) q.set('container', r.container);
    const qs = q.toString();
    return `#/job/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}${qs ? '?' + qs : ''}`;
  }
  if (r.all) return '#/jobs?all=1';
  return r.namespace ? `#/jobs?namespace=${encodeURIComponent(r.namespace)}` : '#/jobs';
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function App() {
  const route = useRoute();
  const [config, setConfig] = useState<Config | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getJSON<Config>('/api/config').then(setConfig, (e: Error) =>
      setError(e instanceof HTTPError && e.status === 401 ? 'Not signed in: open the URL that `paddlejob dashboard` printed; it carries a token.' : e.message),
    );
  }, []);
  useEffect(() => {
    document.title = route.page === 'job' ? `${route.name} · PaddleJob dashboard` : 'PaddleJobs · PaddleJob dashboard';
    // A new page: focus its heading, so keyboard and screen reader users
    // start there, as after a page load.
    requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus());
  }, [route.page, route.page === 'job' ? route.namespace + '/' + route.name : '']);

  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
      <header class="top">
        <a class="brand" href={href({ page: 'jobs', all: false, namespace: route.page === 'jobs' ? route.namespace : route.namespace })}>PaddleJob dashboard</a>
        {config && <span class="cluster" title="the cluster, read with your kubeconfig's credentials">{config.cluster}</span>}
      </header>
      <main id="main" tabIndex={-1}>
        {error && <p class="problem" role="alert">{error}</p>}
        {config && route.page === 'jobs' && (
          <JobsPage namespace={route.all ? '' : route.namespace ?? config.namespace} />
        )}
        {config && route.page === 'job' && <JobPage route={route} />}
      </main>
    </>
  );
}
