import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { getJSON, JobRow, useStream } from './api';
import { href } from './app';
import { age, duration, etaLeft, useNow } from './format';
import { PhaseBadge, ProgressBar, StreamBadge } from './widgets';

// The jobs page holds every row of the namespace (the server sends them
// once, then only those that change), and filters, sorts and pages them
// here: a page of 50 rows renders in a few milliseconds whatever the count.

type SortKey = 'name' | 'phase' | 'restarts' | 'progress' | 'age';
const PAGE_SIZES = [25, 50, 100, 200];
const PHASES = ['Submitted', 'Pending', 'Queued', 'Starting', 'Running', 'Suspended', 'Completed', 'Failed'];

// Timings the benchmark reads (test/e2e/dashboard_test.go): how long the
// page took to show the snapshot and the latest batch of changes, from the
// message's arrival to the next frame after the DOM was updated.
export interface Stats {
  rows: number;
  snapshotMs?: number;
  batches: number;
  lastBatchMs?: number;
  lastBatchRows?: number;
}
declare global {
  interface Window {
    __dashboardStats?: Stats;
  }
}

export function JobsPage({ namespace }: { namespace: string }) {
  const rows = useRef(new Map<string, JobRow>());
  const [version, setVersion] = useState(0);
  const [loaded, setLoaded] = useState(false);
  const [problem, setProblem] = useState('');
  const pending = useRef<{ at: number; kind: 'snapshot' | 'batch'; n: number } | null>(null);
  const now = useNow(2000);

  const [filter, setFilter] = useState('');
  const [phase, setPhase] = useState('');
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: 'age', desc: false });
  const [page, setPage] = useState(0);
  const [pageSize, setPageSize] = useState(50);

  useEffect(() => {
    rows.current = new Map();
    setLoaded(false);
    setPage(0);
    window.__dashboardStats = { rows: 0, batches: 0 };
  }, [namespace]);

  const state = useStream(`/api/jobs/stream?namespace=${encodeURIComponent(namespace)}`, {
    snapshot: (d: { rows: JobRow[] }) => {
      pending.current = { at: performance.now(), kind: 'snapshot', n: d.rows.length };
      const m = new Map<string, JobRow>();
      for (const r of d.rows) m.set(`${r.namespace}/${r.name}`, r);
      rows.current = m;
      setLoaded(true);
      setVersion((v) => v + 1);
    },
    changes: (d: { upserts: JobRow[]; deletes: string[] }) => {
      pending.current = { at: performance.now(), kind: 'batch', n: d.upserts.length + d.deletes.length };
      for (const r of d.upserts) rows.current.set(`${r.namespace}/${r.name}`, r);
      for (const k of d.deletes) rows.current.delete(k);
      setVersion((v) => v + 1);
    },
    problem: (d: { message: string }) => setProblem(d.message),
  });

  useLayoutEffect(() => {
    const p = pending.current;
    if (!p) return;
    pending.current = null;
    requestAnimationFrame(() => {
      const ms = performance.now() - p.at;
      const s = (window.__dashboardStats ??= { rows: 0, batches: 0 });
      s.rows = rows.current.size;
      if (p.kind === 'snapshot') s.snapshotMs = ms;
      else {
        s.batches++;
        s.lastBatchMs = ms;
        s.lastBatchRows = p.n;
      }
    });
  }, [version]);

  const all = namespace === '';
  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    let list = [...rows.current.values()].filter(
      (r) => (!f || r.name.includes(f) || (all && r.namespace.includes(f))) && (!phase || r.phase === phase),
    );
    const cmp: Record<SortKey, (a: JobRow, b: JobRow) => number> = {
      name: (a, b) => (a.namespace + '/' + a.name).localeCompare(b.namespace + '/' + b.name),
      phase: (a, b) => a.phase.localeCompare(b.phase),
      restarts: (a, b) => a.restarts - b.restarts,
      progress: (a, b) => (a.percent ?? -1) - (b.percent ?? -1),
      // Newest first when ascending by age.
      age: (a, b) => Date.parse(b.created) - Date.parse(a.created),
    };
    list.sort((a, b) => cmp[sort.key](a, b) || cmp.name(a, b));
    if (sort.desc) list.reverse();
    return list;
  }, [version, filter, phase, sort, all]);

  const counts = useMemo(() => {
    const c: Record<string, number> = {};
    for (const r of rows.current.values()) c[r.phase] = (c[r.phase] ?? 0) + 1;
    return c;
  }, [version]);

  const pages = Math.max(1, Math.ceil(shown.length / pageSize));
  const current = Math.min(page, pages - 1);
  const visible = shown.slice(current * pageSize, (current + 1) * pageSize);

  const header = (key: SortKey, label: string) => (
    <th scope="col" aria-sort={sort.key === key ? (sort.desc ? 'descending' : 'ascending') : undefined}>
      <button class="sort" onClick={() => setSort({ key, desc: sort.key === key ? !sort.desc : false })}>
        {label}
        <span aria-hidden="true">{sort.key === key ? (sort.desc ? ' ▼' : ' ▲') : ''}</span>
      </button>
    </th>
  );

  return (
    <>
      <div class="title-row">
        <h1 tabIndex={-1}>PaddleJobs {all ? 'in all namespaces' : <>in <span class="mono">{namespace}</span></>}</h1>
        <StreamBadge state={state} />
      </div>
      <NamespacePicker namespace={namespace} />
      {problem && <p class="problem" role="alert">{problem}</p>}
      <p class="summary" data-testid="summary" data-count={loaded ? rows.current.size : undefined}>
        {loaded ? (
          <>
            <strong>{rows.current.size}</strong> {rows.current.size === 1 ? 'job' : 'jobs'}
            {PHASES.filter((p) => counts[p]).map((p) => (
              <span key={p}> · {counts[p]} {p.toLowerCase()}</span>
            ))}
          </>
        ) : (
          'Loading…'
        )}
      </p>
      <div class="controls" role="search">
        <label>
          Filter by name <input type="search" value={filter} onInput={(e) => { setFilter(e.currentTarget.value); setPage(0); }} />
        </label>
        <label>
          Phase{' '}
          <select value={phase} onChange={(e) => { setPhase(e.currentTarget.value); setPage(0); }}>
            <option value="">any</option>
            {PHASES.map((p) => (
              <option key={p} value={p}>{p}{counts[p] ? ` (${counts[p]})` : ''}</option>
            ))}
          </select>
        </label>
      </div>
      <table class="jobs">
        <caption class="visually-hidden">PaddleJobs, {shown.length} shown, sorted by {sort.key}</caption>
        <thead>
          <tr>
            {header('name', 'Name')}
            {header('phase', 'Phase')}
            <th scope="col">Mode</th>
            <th scope="col">Ready</th>
            {header('restarts', 'Restarts')}
            {header('progress', 'Progress')}
            <th scope="col">ETA</th>
            <th scope="col">Metric</th>
            {header('age', 'Age')}
          </tr>
        </thead>
        <tbody>
          {visible.map((r) => (
            <Row key={`${r.namespace}/${r.name}`} row={r} all={all} now={now} />
          ))}
        </tbody>
      </table>
      {loaded && shown.length === 0 && <p class="empty">No PaddleJobs{filter || phase ? ' match' : ' here'}.</p>}
      <nav class="pager" aria-label="Pages of jobs">
        <button disabled={current === 0} onClick={() => setPage(current - 1)}>Previous</button>
        <span>
          Page {current + 1} of {pages} ({shown.length} {shown.length === 1 ? 'job' : 'jobs'})
        </span>
        <button disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>Next</button>
        <label>
          Rows per page{' '}
          <select value={pageSize} onChange={(e) => { setPageSize(Number(e.currentTarget.value)); setPage(0); }}>
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>{n}</option>
            ))}
          </select>
        </label>
      </nav>
    </>
  );
}

function Row({ row: r, all, now }: { row: JobRow; all: boolean; now: number }) {
  const finished = r.phase === 'Completed' || r.phase === 'Failed';
  const eta = finished ? undefined : etaLeft(r.etaSeconds, r.progressTime, r.percent, now);
  return (
    <tr data-job={`${r.namespace}/${r.name}`}>
      <td>
        <a href={href({ page: 'job', namespace: r.namespace, name: r.name })}>
          {all && <span class="ns">{r.namespace}/</span>}
          {r.name}
        </a>
      </td>
      <td data-col="phase">
        <PhaseBadge phase={r.phase} />
        {r.reason && <span class="reason"> {r.reason}</span>}
      </td>
      <td>{r.mode ?? '-'}</td>
      <td>
        {r.roles.map((rr) => (
          <span key={rr.role} class="role">
            {rr.role} {rr.ready}
          </span>
        ))}
      </td>
      <td class="num">{r.restarts}</td>
      <td>{r.percent !== undefined ? <ProgressBar percent={r.percent} epoch={r.epoch} totalEpochs={r.totalEpochs} /> : '-'}</td>
      <td>{eta !== undefined ? duration(eta) : '-'}</td>
      <td class="mono">{r.metric ? `${r.metric.name} ${r.metric.value}` : '-'}</td>
      <td>{age(r.created, now)}</td>
    </tr>
  );
}

function NamespacePicker({ namespace }: { namespace: string }) {
  const [names, setNames] = useState<string[]>([]);
  const [value, setValue] = useState(namespace);
  useEffect(() => setValue(namespace), [namespace]);
  useEffect(() => {
    getJSON<{ names: string[] }>('/api/namespaces').then((n) => setNames(n.names), () => setNames([]));
  }, []);
  const go = (ns: string) => {
    location.hash = href({ page: 'jobs', all: ns === '', namespace: ns || undefined });
  };
  return (
    <form class="controls" onSubmit={(e) => { e.preventDefault(); go(value.trim()); }}>
      <label>
        Namespace{' '}
        <input list="namespaces" value={value} placeholder="all namespaces" onInput={(e) => setValue(e.currentTarget.value)} spellcheck={false} />
      </label>
      <datalist id="namespaces">
        {names.map((n) => (
          <option key={n} value={n} />
        ))}
      </datalist>
      <button type="submit">Show</button>
      <button type="button" disabled={namespace === ''} onClick={() => go('')}>All namespaces</button>
    </form>
  );
}
