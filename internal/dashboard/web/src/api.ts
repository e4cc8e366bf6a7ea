// The server's JSON (internal/dashboard) and how the pages read it.
import { useEffect, useRef, useState } from 'preact/hooks';

export interface RoleReady {
  role: string;
  ready: string;
  replicas: number;
  running: number;
}

export interface Metric {
  name: string;
  value: string;
}

export interface JobRow {
  namespace: string;
  name: string;
  phase: string;
  mode?: string;
  roles: RoleReady[];
  restarts: number;
  percent?: number;
  etaSeconds?: number;
  progressTime?: string;
  epoch?: number;
  totalEpochs?: number;
  metric?: Metric;
  created: string;
  reason?: string;
}

export interface JobProgress {
  percent?: number;
  estimatedSecondsRemaining?: number;
  epoch?: number;
  totalEpochs?: number;
  step?: number;
  metrics?: Metric[];
  reporter?: string;
  lastUpdateTime?: string;
}

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  time: string;
}

export interface PodRow {
  name: string;
  role: string;
  index: number;
  state: string;
  reason?: string;
  message?: string;
  exitCode?: number;
  // the id of the known failure its failed container met
  known?: string;
  restarts: number;
  node?: string;
  ip?: string;
  created: string;
  containers: string[];
  initContainers: string[];
}

// What a known failure means (docs/paddle-known-issues.md).
export interface Explanation {
  id: string;
  cause: string;
  fix: string;
  doc: string;
}

// The job's latest failure: its explanation, and while the pod exists the
// failed container and the last lines of its log.
export interface FailureView {
  explanation?: Explanation;
  pod?: string;
  container?: string;
  exitCode?: number;
  reason?: string;
  lastLines?: string;
}

export interface RoleSpec {
  role: string;
  replicas: number;
  image: string;
  restartPolicy: string;
}

// The scale control's range of an elastic job's workers.
export interface ElasticView {
  replicas: number;
  min: number;
  max: number;
}

// One transition of a condition, or a restart (type 'Restart', status '').
export interface TimelineEntry {
  time: string;
  type: string;
  status: string;
  reason: string;
  message: string;
}

// A span of time; to is absent while it lasts.
export interface Interval {
  from: string;
  to?: string;
}

export interface JobView {
  exists: boolean;
  row: JobRow;
  uid?: string;
  progress?: JobProgress;
  startTime?: string;
  completionTime?: string;
  lastRestartTime?: string;
  restartCount: number;
  spec: {
    intranet: string;
    cleanPodPolicy: string;
    restartScope: string;
    backoffLimit: number;
    suspend: boolean;
    roles: RoleSpec[];
  };
  elastic?: ElasticView;
  conditions: Condition[];
  pods: PodRow[];
  restarts: string[];
  timeline: TimelineEntry[];
  suspensions: Interval[];
  failure?: FailureView;
}

export interface EventRow {
  // the pod's name for a pod's event
  object?: string;
  type: string;
  reason: string;
  message: string;
  count: number;
  time: string;
}

export interface Series {
  name: string;
  // [unix seconds, value]
  points: [number, number][];
  // the step of each point, null where none was reported
  steps?: (number | null)[];
}

export interface History {
  metrics: Series[] | null;
}

export interface Config {
  cluster: string;
  namespace: string;
}

export type StreamState = 'connecting' | 'live' | 'reconnecting';

// useStream reads a server-sent event stream while the component lives (or
// until url changes); handlers get each named event's parsed data. The
// browser reconnects by itself, and the server then sends everything again.
export function useStream(url: string, handlers: Record<string, (data: any) => void>): StreamState {
  const [state, setState] = useState<StreamState>('connecting');
  const ref = useRef(handlers);
  ref.current = handlers;
  useEffect(() => {
    setState('connecting');
    const es = new EventSource(url);
    es.onopen = () => setState('live');
    es.onerror = () => setState(es.readyState === EventSource.CLOSED ? 'reconnecting' : 'reconnecting');
    const names = Object.keys(ref.current);
    const listeners = names.map((name) => {
      const l = (e: MessageEvent) => ref.current[name]?.(JSON.parse(e.data));
      es.addEventListener(name, l as EventListener);
      return l;
    });
    return () => {
      names.forEach((name, i) => es.removeEventListener(name, listeners[i] as EventListener));
      es.close();
    };
  }, [url]);
  return state;
}

export class HTTPError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export async function getText(url: string, signal?: AbortSignal): Promise<string> {
  const r = await fetch(url, { signal, credentials: 'same-origin' });
  const text = await r.text();
  if (!r.ok) throw new HTTPError(r.status, text.trim() || r.statusText);
  return text;
}

export async function getJSON<T>(url: string): Promise<T> {
  return JSON.parse(await getText(url)) as T;
}

export function jobURL(ns: string, name: string): string {
  return `/api/namespaces/${encodeURIComponent(ns)}/jobs/${encodeURIComponent(name)}`;
}

// operate asks the server to change something (operate.go): the header
// tells it the request is this page's own. It returns the server's message,
// or throws the cluster's refusal as it is.
export async function operate(method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<string> {
  const r = await fetch(url, {
    method,
    credentials: 'same-origin',
    headers: { 'X-Paddlejob-Dashboard': '1', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new HTTPError(r.status, text.trim() || r.statusText);
  return (JSON.parse(text) as { message: string }).message;
}
