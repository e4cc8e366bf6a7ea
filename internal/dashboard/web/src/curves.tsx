import { useMemo, useState } from 'preact/hooks';
import { History, jobURL, JobView, useStream } from './api';
import { ChartOptions, MetricChart, Other, Span, XMode } from './chart';

// The job's training curves, with how to draw them: against time or step,
// on a log scale, smoothed.

const SMOOTHING = [0, 0.6, 0.9, 0.97];

export function Curves({ namespace, name, view, history }: { namespace: string; name: string; view: JobView; history: History }) {
  const [options, setOptions] = useState<ChartOptions>({ mode: 'time', log: false, smoothing: 0 });
  const [typed, setTyped] = useState('');
  const [compared, setCompared] = useState('');
  const [otherHistory, setOtherHistory] = useState<History>({ metrics: [] });
  const set = (o: Partial<ChartOptions>) => setOptions({ ...options, ...o });
  const restarts = useMemo(() => view.restarts.map((t) => Date.parse(t) / 1000), [view.restarts.join()]);
  const key = view.suspensions.map((s) => `${s.from}-${s.to ?? ''}`).join();
  const suspensions = useMemo(
    () => view.suspensions.map((s): Span => [Date.parse(s.from) / 1000, s.to ? Date.parse(s.to) / 1000 : Infinity]),
    [key],
  );
  const metrics = history.metrics ?? [];
  return (
    <section class="card" aria-labelledby="curves-title">
      <div class="title-row">
        <h2 id="curves-title">Training curves</h2>
        <fieldset class="toggle">
          <legend class="visually-hidden">Draw the curves against</legend>
          {(['time', 'step'] as XMode[]).map((m) => (
            <label key={m}>
              <input type="radio" name="xmode" value={m} checked={options.mode === m} onChange={() => set({ mode: m })} /> by {m}
            </label>
          ))}
        </fieldset>
        <label>
          <input type="checkbox" name="log" checked={options.log} onChange={(e) => set({ log: (e.target as HTMLInputElement).checked })} /> log scale
        </label>
        <label>
          smoothing{' '}
          <select name="smoothing" value={String(options.smoothing)} onChange={(e) => set({ smoothing: Number((e.target as HTMLSelectElement).value) })}>
            {SMOOTHING.map((w) => (
              <option key={w} value={String(w)}>{w === 0 ? 'none' : w}</option>
            ))}
          </select>
        </label>
      </div>
      <form
        class="controls"
        onSubmit={(e) => {
          e.preventDefault();
          setOtherHistory({ metrics: [] });
          setCompared(typed.trim() === name ? '' : typed.trim());
        }}
      >
        <label>
          Compare with the job{' '}
          <input name="compare" value={typed} placeholder="name in this namespace" onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Compare</button>
        {compared && (
          <button type="button" onClick={() => { setCompared(''); setTyped(''); }}>
            Stop comparing
          </button>
        )}
        {compared && <OtherRun namespace={namespace} name={compared} onHistory={setOtherHistory} />}
      </form>
      <p class="muted">
        {compared && (
          <>
            Each curve of {name} is drawn with {compared}'s of the same metric, against{' '}
            {options.mode === 'time' ? 'the time since each one’s first point' : 'their steps'}; restarts and suspensions are
            not marked.{' '}
          </>
        )}
        Every metric the training program reported, from the job's metric history (the ConfigMap{' '}
        <span class="mono">{name}-metrics</span>, which the operator writes at most every 30 seconds).
        {!compared && restarts.length > 0 && <> Dashed red lines mark the job's restarts.</>}
        {!compared && suspensions.length > 0 && <> Grey bands are its suspensions: no line is drawn across them.</>}
        {options.smoothing > 0 && <> The faint lines are the values reported, the strong ones their moving average.</>}
        {options.log && <> On the log scale, values of 0 or less are left out.</>}
      </p>
      {metrics.length === 0 ? (
        <p class="empty">No metrics reported yet.</p>
      ) : (
        <div class="charts">
          {metrics.map((s) => (
            <MetricChart key={s.name} series={s} job={name} restarts={restarts} suspensions={suspensions} options={options}
              other={otherOf(compared, otherHistory, s.name)} />
          ))}
        </div>
      )}
    </section>
  );
}

// OtherRun follows the other job's metric history, from its page's stream.
function OtherRun({ namespace, name, onHistory }: { namespace: string; name: string; onHistory: (h: History) => void }) {
  const [problem, setProblem] = useState('');
  const [exists, setExists] = useState(true);
  useStream(`${jobURL(namespace, name)}/stream`, {
    history: onHistory,
    job: (v: JobView) => setExists(v.exists),
    problem: (d: { message: string }) => setProblem(d.message),
  });
  if (problem) return <span class="problem" role="alert">{problem}</span>;
  if (!exists) return <span class="problem" role="status">PaddleJob {namespace}/{name} does not exist.</span>;
  return null;
}

// otherOf is the other job's series of a metric, memoised by its points so
// a chart redraws only when they change.
const others = new WeakMap<object, Map<string, Other>>();
function otherOf(job: string, h: History, metric: string): Other | undefined {
  if (!job) return undefined;
  const series = (h.metrics ?? []).find((m) => m.name === metric);
  if (!series) return undefined;
  let byMetric = others.get(h);
  if (!byMetric) others.set(h, (byMetric = new Map()));
  let o = byMetric.get(metric + '\u0000' + job);
  if (!o) byMetric.set(metric + '\u0000' + job, (o = { job, series }));
  return o;
}
