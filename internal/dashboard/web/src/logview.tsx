import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { getText, jobURL } from './api';

// A pod's log, followed as it grows: the server streams it (fetch with a
// stream reader) until the container ends or the page leaves it.

const MAX_LINES = 5000;
const TAILS = [{ n: 500, label: 'last 500 lines' }, { n: 2000, label: 'last 2000 lines' }, { n: 0, label: 'whole log' }];

export function LogView({ namespace, job, pod, containers, container, onContainer, onClose }: {
  namespace: string;
  job: string;
  pod: string;
  containers: string[];
  container?: string;
  onContainer: (c: string) => void;
  onClose: () => void;
}) {
  const [lines, setLines] = useState<string[]>([]);
  const [dropped, setDropped] = useState(0);
  const [follow, setFollow] = useState(true);
  const [previous, setPrevious] = useState(false);
  const [tail, setTail] = useState(2000);
  const [state, setState] = useState<'reading' | 'following' | 'ended' | 'error'>('reading');
  const [error, setError] = useState('');
  const pre = useRef<HTMLPreElement>(null);
  const atBottom = useRef(true);
  const c = container ?? containers[0] ?? '';

  useEffect(() => {
    const ctl = new AbortController();
    setLines([]);
    setDropped(0);
    setError('');
    atBottom.current = true;
    const q = new URLSearchParams({ container: c, tailLines: String(tail) });
    if (follow && !previous) q.set('follow', 'true');
    if (previous) q.set('previous', 'true');
    const url = `${jobURL(namespace, job)}/pods/${encodeURIComponent(pod)}/log?${q}`;
    let buf: string[] = [];
    let scheduled = false;
    // Lines are added once a frame, however fast they come.
    const flush = () => {
      scheduled = false;
      const add = buf;
      buf = [];
      setLines((old) => {
        const all = old.concat(add);
        if (all.length > MAX_LINES) {
          setDropped((d) => d + all.length - MAX_LINES);
          return all.slice(all.length - MAX_LINES);
        }
        return all;
      });
    };
    const push = (ls: string[]) => {
      buf.push(...ls);
      if (!scheduled) {
        scheduled = true;
        requestAnimationFrame(flush);
      }
    };
    (async () => {
      setState(follow && !previous ? 'following' : 'reading');
      const r = await fetch(url, { signal: ctl.signal, credentials: 'same-origin' });
      if (!r.ok || !r.body) {
        throw new Error((await r.text()).trim() || r.statusText);
      }
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let rest = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parts = (rest + value).split('\n');
        rest = parts.pop() ?? '';
        push(parts);
      }
      if (rest) push([rest]);
      setState('ended');
    })().catch((e: Error) => {
      if (ctl.signal.aborted) return;
      setError(e.message);
      setState('error');
    });
    return () => ctl.abort();
  }, [namespace, job, pod, c, follow, previous, tail]);

  useLayoutEffect(() => {
    const el = pre.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  const status = {
    reading: 'reading…',
    following: 'following: new lines appear as the program writes them',
    ended: follow && !previous ? 'the container ended: end of log' : 'end of log',
    error: 'error',
  }[state];

  return (
    <section class="card log" aria-labelledby="log-title">
      <div class="title-row">
        <h2 id="log-title">
          Log of <span class="mono">{pod}</span>
        </h2>
        <button type="button" onClick={onClose}>Close log</button>
      </div>
      <div class="controls">
        {containers.length > 1 && (
          <label>
            Container{' '}
            <select value={c} onChange={(e) => onContainer(e.currentTarget.value)}>
              {containers.map((n) => (
                <option key={n} value={n}>{n}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          <input type="checkbox" checked={follow} disabled={previous} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow
        </label>
        <label>
          <input type="checkbox" checked={previous} onChange={(e) => setPrevious(e.currentTarget.checked)} /> Before the last restart
        </label>
        <label>
          Show{' '}
          <select value={tail} onChange={(e) => setTail(Number(e.currentTarget.value))}>
            {TAILS.map((t) => (
              <option key={t.n} value={t.n}>{t.label}</option>
            ))}
          </select>
        </label>
        <span class="muted" role="status" data-testid="log-state" data-state={state}>{status}</span>
      </div>
      {error && <p class="problem" role="alert">{error}</p>}
      {dropped > 0 && <p class="muted">{dropped} earlier lines not shown (the view keeps the last {MAX_LINES}).</p>}
      <pre
        ref={pre}
        class="logtext"
        data-testid="log"
        tabIndex={0}
        aria-label={`log of pod ${pod}, container ${c}`}
        onScroll={(e) => {
          const el = e.currentTarget;
          atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.join('\n')}
      </pre>
    </section>
  );
}

export function YAMLView({ namespace, job }: { namespace: string; job: string }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState('');
  const load = () => {
    setError('');
    getText(`${jobURL(namespace, job)}/yaml`).then(setText, (e: Error) => setError(e.message));
  };
  return (
    <details class="card" onToggle={(e) => (e.currentTarget as HTMLDetailsElement).open && load()}>
      <summary>
        <h2>YAML</h2>
      </summary>
      <div class="controls">
        <button type="button" onClick={load}>Reload</button>
      </div>
      {error && <p class="problem" role="alert">{error}</p>}
      <pre class="yaml" tabIndex={0} aria-label="the job's YAML">{text ?? 'Loading…'}</pre>
    </details>
  );
}
