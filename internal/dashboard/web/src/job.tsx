import { useState } from 'preact/hooks';
import { Actions } from './actions';
import { EventRow, FailureView, History, jobURL, JobView, useStream } from './api';
import { href, Route } from './app';
import { Curves } from './curves';
import { age, clock, dateTime, duration, etaLeft, useNow } from './format';
import { LogView, YAMLView } from './logview';
import { PhaseBadge, ProgressBar, StreamBadge } from './widgets';

type JobRoute = Extract<Route, { page: 'job' }>;

export function JobPage({ route }: { route: JobRoute }) {
  const { namespace, name } = route;
  const [view, setView] = useState<JobView | null>(null);
  const [events, setEvents] = useState<EventRow[]>([]);
  const [history, setHistory] = useState<History>({ metrics: [] });
  const [problem, setProblem] = useState('');
  const now = useNow(1000);
  const state = useStream(`${jobURL(namespace, name)}/stream`, {
    job: setView,
    events: setEvents,
    history: setHistory,
    problem: (d: { message: string }) => setProblem(d.message),
  });
  const logPod = view?.pods.find((p) => p.name === route.log);
  const go = (r: Partial<JobRoute>) => {
    location.hash = href({ ...route, ...r });
  };

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href={href({ page: 'jobs', namespace, all: false })}>PaddleJobs in {namespace}</a> <span aria-hidden="true">›</span>{' '}
        <span aria-current="page">{name}</span>
      </nav>
      <div class="title-row">
        <h1 tabIndex={-1}>{name}</h1>
        {view?.exists && (
          <span data-testid="phase" data-phase={view.row.phase}>
            <PhaseBadge phase={view.row.phase} />
          </span>
        )}
        <StreamBadge state={state} />
      </div>
      {problem && <p class="problem" role="alert">{problem}</p>}
      {view && !view.exists && (
        <p class="problem" role="status">
          PaddleJob {namespace}/{name} does not exist (yet, or any more). This page shows it as soon as it does.
        </p>
      )}
      {!view && !problem && <p>Loading…</p>}
      {view?.exists && (
        <>
          <Actions namespace={namespace} name={name} view={view} />
          <Summary view={view} now={now} />
          {view.failure && <Failure failure={view.failure} failed={view.row.phase === 'Failed'} onLog={(pod) => go({ log: pod, container: undefined })} />}
          <Curves namespace={namespace} name={name} view={view} history={history} />
          <Pods view={view} now={now} selected={route.log} onLog={(pod) => go({ log: pod, container: undefined })} />
          {route.log && (logPod ? (
            <LogView
              namespace={namespace}
              job={name}
              pod={route.log}
              containers={[...logPod.containers, ...logPod.initContainers]}
              container={route.container}
              onContainer={(c) => go({ container: c })}
              onClose={() => go({ log: undefined, container: undefined })}
            />
          ) : (
            <p class="muted">Pod {route.log} is not one of the job's pods now.</p>
          ))}
          <div class="two">
            <Timeline view={view} />
            <Events events={events} now={now} />
          </div>
          <YAMLView namespace={namespace} job={name} />
        </>
      )}
    </>
  );
}

function Summary({ view, now }: { view: JobView; now: number }) {
  const p = view.progress;
  const r = view.row;
  const eta = r.phase === 'Completed' || r.phase === 'Failed' ? undefined : etaLeft(p?.estimatedSecondsRemaining, p?.lastUpdateTime, p?.percent, now);
  return (
    <section class="card" aria-label="Summary">
      <dl class="facts">
        <div>
          <dt>Mode</dt>
          <dd>{r.mode ?? '-'}</dd>
        </div>
        <div>
          <dt>Ready</dt>
          <dd>
            {r.roles.map((rr) => (
              <span key={rr.role} class="role">{rr.role} {rr.ready}</span>
            ))}
          </dd>
        </div>
        <div>
          <dt>Restarts</dt>
          <dd data-testid="restarts">
            {r.restarts}
            {view.lastRestartTime && <span class="muted"> (last {age(view.lastRestartTime, now)} ago)</span>}
          </dd>
        </div>
        <div>
          <dt>Progress</dt>
          <dd>{p?.percent !== undefined ? <ProgressBar percent={p.percent} epoch={p.epoch} totalEpochs={p.totalEpochs} /> : '-'}</dd>
        </div>
        <div>
          <dt>Step</dt>
          <dd>{p?.step ?? '-'}</dd>
        </div>
        <div>
          <dt>ETA</dt>
          <dd>{eta !== undefined ? duration(eta) : '-'}</dd>
        </div>
        <div>
          <dt>Latest metrics</dt>
          <dd class="mono">{p?.metrics?.length ? p.metrics.map((m) => `${m.name} ${m.value}`).join(' · ') : '-'}</dd>
        </div>
        <div>
          <dt>Reported by</dt>
          <dd>{p?.reporter ? <>{p.reporter}, {age(p.lastUpdateTime, now)} ago</> : '-'}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>{view.startTime ? dateTime(view.startTime) : '-'}</dd>
        </div>
        <div>
          <dt>{r.phase === 'Failed' ? 'Failed' : 'Finished'}</dt>
          <dd>{view.completionTime ? `${dateTime(view.completionTime)} (after ${duration((Date.parse(view.completionTime) - Date.parse(view.startTime ?? r.created)) / 1000)})` : '-'}</dd>
        </div>
        <div>
          <dt>Spec</dt>
          <dd>
            intranet {view.spec.intranet}, clean pods {view.spec.cleanPodPolicy}, restart scope {view.spec.restartScope}, backoff limit {view.spec.backoffLimit}
            {view.spec.suspend ? ', suspended' : ''}
          </dd>
        </div>
      </dl>
    </section>
  );
}

// Failure says why the job failed (or last restarted): what a known failure
// means and what to do, and the failed container's last lines.
function Failure({ failure, failed, onLog }: { failure: FailureView; failed: boolean; onLog: (pod: string) => void }) {
  const e = failure.explanation;
  return (
    <section class="card failure" aria-labelledby="failure-title" data-testid="failure">
      <h2 id="failure-title">{failed ? 'Why it failed' : 'Why it last restarted'}</h2>
      {failure.pod && (
        <p>
          <span class="mono">{failure.pod}/{failure.container}</span> exited with code {failure.exitCode}
          {failure.reason && <> ({failure.reason})</>}.{' '}
          <button type="button" onClick={() => onLog(failure.pod!)}>
            Log
          </button>
        </p>
      )}
      {e ? (
        <dl class="explanation" data-known={e.id}>
          <dt>Known failure</dt>
          <dd class="mono">{e.id}</dd>
          <dt>Cause</dt>
          <dd>{e.cause}</dd>
          <dt>Fix</dt>
          <dd>{e.fix}</dd>
          <dt>More</dt>
          <dd class="mono">{e.doc}</dd>
        </dl>
      ) : (
        <p class="muted">Not a failure the operator knows: its last lines say what happened.</p>
      )}
      {failure.lastLines && (
        <>
          <h3 class="small">Last lines of its log</h3>
          <pre class="logtext" tabIndex={0}>{failure.lastLines}</pre>
        </>
      )}
    </section>
  );
}

function Pods({ view, now, selected, onLog }: { view: JobView; now: number; selected?: string; onLog: (pod: string) => void }) {
  return (
    <section class="card" aria-labelledby="pods-title">
      <h2 id="pods-title">Pods</h2>
      {view.pods.length === 0 ? (
        <p class="empty">No pods{view.row.phase === 'Completed' || view.row.phase === 'Failed' ? ' left (the clean pod policy deleted them)' : ' yet'}.</p>
      ) : (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Pod</th>
                <th scope="col">State</th>
                <th scope="col">Reason</th>
                <th scope="col">Restarts</th>
                <th scope="col">Node</th>
                <th scope="col">IP</th>
                <th scope="col">Age</th>
                <th scope="col"><span class="visually-hidden">Log</span></th>
              </tr>
            </thead>
            <tbody>
              {view.pods.map((p) => (
                <tr key={p.name} data-pod={p.name} aria-current={p.name === selected ? 'true' : undefined}>
                  <td class="mono">{p.name}</td>
                  <td><PhaseBadge phase={p.state} /></td>
                  <td>
                    {p.reason ?? ''}
                    {p.exitCode !== undefined && <> (exit code {p.exitCode})</>}
                    {p.message && <div class="muted small">{p.message}</div>}
                    {p.known && <div class="small">known failure <span class="mono">{p.known}</span></div>}
                  </td>
                  <td class="num">{p.restarts}</td>
                  <td>{p.node ?? '-'}</td>
                  <td class="mono">{p.ip ?? '-'}</td>
                  <td>{age(p.created, now)}</td>
                  <td>
                    <button type="button" onClick={() => onLog(p.name)} aria-label={`Log of ${p.name}`}>
                      Log
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

// Timeline is every transition of the job's conditions and every restart,
// oldest first.
function Timeline({ view }: { view: JobView }) {
  return (
    <section class="card" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      {view.timeline.length === 0 ? (
        <p class="empty">No transitions yet.</p>
      ) : (
        <ol class="timeline" data-testid="timeline">
          {view.timeline.map((c, i) => (
            <li key={i} class={c.type === 'Restart' ? 'cond restart' : `cond cond-${c.status.toLowerCase()}`} data-type={c.type} data-status={c.status}>
              <time dateTime={c.time}>{dateTime(c.time)}</time>
              <div>
                <strong>{c.type === 'Restart' ? 'Restarted' : c.type}</strong> {c.status && <span class="badge">{c.status}</span>}{' '}
                {c.reason && <span class="mono">{c.reason}</span>}
                {c.message && <div class="small">{c.message}</div>}
              </div>
            </li>
          ))}
        </ol>
      )}
      <p class="muted small">Earlier transitions come from the operator's events, which the API server keeps for an hour by default.</p>
    </section>
  );
}

function Events({ events, now }: { events: EventRow[]; now: number }) {
  return (
    <section class="card" aria-labelledby="events-title">
      <h2 id="events-title">Events</h2>
      {events.length === 0 ? (
        <p class="empty">No events of the job or its pods (the API server keeps them for an hour by default).</p>
      ) : (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Of</th>
                <th scope="col">Type</th>
                <th scope="col">Reason</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {[...events].reverse().map((e, i) => (
                <tr key={i} class={e.type === 'Warning' ? 'warning' : undefined}>
                  <td title={dateTime(e.time)}>
                    {clock(e.time)} <span class="muted small">({age(e.time, now)} ago)</span>
                  </td>
                  <td class="mono small">{e.object ?? 'job'}</td>
                  <td>{e.type}</td>
                  <td class="mono">{e.reason}{e.count > 1 ? ` ×${e.count}` : ''}</td>
                  <td class="small">{e.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
