import { useMemo, useState } from 'preact/hooks';
import { History, JobView } from './api';
import { ChartOptions, MetricChart, Span, XMode } from './chart';

// The job's training curves, with how to draw them: against time or step,
// on a log scale, smoothed.

const SMOOTHING = [0, 0.6, 0.9, 0.97];

export function Curves({ name, view, history }: { name: string; view: JobView; history: History }) {
  const [options, setOptions] = useState<ChartOptions>({ mode: 'time', log: false, smoothing: 0 });
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
      <p class="muted">
        Every metric the training program reported, from the job's metric history (the ConfigMap{' '}
        <span class="mono">{name}-metrics</span>, which the operator writes at most every 30 seconds).
        {restarts.length > 0 && <> Dashed red lines mark the job's restarts.</>}
        {suspensions.length > 0 && <> Grey bands are its suspensions: no line is drawn across them.</>}
        {options.smoothing > 0 && <> The faint lines are the values reported, the strong ones their moving average.</>}
        {options.log && <> On the log scale, values of 0 or less are left out.</>}
      </p>
      {metrics.length === 0 ? (
        <p class="empty">No metrics reported yet.</p>
      ) : (
        <div class="charts">
          {metrics.map((s) => (
            <MetricChart key={s.name} series={s} restarts={restarts} suspensions={suspensions} options={options} />
          ))}
        </div>
      )}
    </section>
  );
}
