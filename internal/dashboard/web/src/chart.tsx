import uPlot from 'uplot';
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { Series } from './api';
import { clock, duration } from './format';

// One metric's curve, drawn with uPlot on a canvas, against time or the
// training step: restarts marked by dashed lines, suspensions by a shaded
// band with a gap in the line (no point was reported there, so none is
// drawn); a log scale and smoothing on request. The numbers are also in a
// table under the chart for those who do not see it.

export type XMode = 'time' | 'step';

// How the curves are drawn: against what, on a log scale or not, and the
// weight of the exponential moving average (0: none).
export interface ChartOptions {
  mode: XMode;
  log: boolean;
  smoothing: number;
}

// A suspension in unix seconds, to Infinity while it lasts.
export type Span = [number, number];

// Line colours of at least 4.5:1 contrast on white, one per run.
const COLORS = ['#0b5cad', '#b3261e', '#1a7f37', '#8250df', '#9a6700', '#bc4c00', '#0e7490', '#6e7781'];
const RESTART = '#b3261e';
const SUSPENDED = 'rgba(110, 119, 129, 0.22)';

interface Plot {
  data: uPlot.AlignedData;
  labels: string[];
  marks: number[];
  spans: Span[];
}

// plotOf lays a series out for uPlot. Against time it is one line, broken
// by a null point at each suspension. Against steps each run (the points
// between two restarts or resumptions) is a line of its own, since the
// program then counts its steps again (from 0, or from its checkpoint);
// marks are where each later run starts.
export function plotOf(s: Series, restarts: number[], suspensions: Span[], mode: XMode): Plot {
  const first = s.points[0]?.[0] ?? Infinity;
  if (mode === 'time') {
    const spans = suspensions.filter(([, to]) => to >= first);
    const xs: number[] = [];
    const ys: (number | null)[] = [];
    let k = 0;
    for (const [t, v] of s.points) {
      for (; k < spans.length && spans[k][0] < t; k++) {
        const prev = xs[xs.length - 1];
        if (prev === undefined) continue;
        // At the suspension's start, or between the two points when one
        // was reported at that very second.
        const gap = spans[k][0] > prev ? spans[k][0] : (prev + t) / 2;
        if (gap > prev && ys[ys.length - 1] !== null) {
          xs.push(gap);
          ys.push(null);
        }
      }
      xs.push(t);
      ys.push(v);
    }
    return {
      data: [xs, ys],
      labels: [s.name],
      // Restarts since the first point, the latest one even when no point
      // came after it yet.
      marks: restarts.filter((t) => t >= first),
      spans,
    };
  }
  const bounds = [...restarts, ...suspensions.map(([, to]) => to).filter((t) => Number.isFinite(t))].sort((a, b) => a - b);
  const runs: Map<number, number>[] = [];
  let runOfLast = -1;
  let before = 0; // boundaries before the point
  s.points.forEach(([t, v], i) => {
    while (before < bounds.length && bounds[before] <= t) before++;
    if (before !== runOfLast) {
      runOfLast = before;
      runs.push(new Map());
    }
    const step = s.steps?.[i];
    if (step !== undefined && step !== null) runs[runs.length - 1].set(step, v);
  });
  const kept = runs.filter((r) => r.size > 0);
  const xs = [...new Set(kept.flatMap((r) => [...r.keys()]))].sort((a, b) => a - b);
  return {
    data: [xs, ...kept.map((r) => xs.map((x) => r.get(x) ?? null))] as uPlot.AlignedData,
    labels: kept.map((_, i) => (kept.length > 1 ? `${s.name} (run ${i + 1})` : s.name)),
    marks: kept.slice(1).map((r) => Math.min(...r.keys())),
    spans: [],
  };
}

// Other is another job's series of the same metric, to compare with.
export interface Other {
  job: string;
  series: Series;
}

// compareOf lays two jobs' series of a metric on one chart: against the
// time since each one's first point (their clocks differ), or against
// their steps. Restarts and suspensions are not marked: whose would they be?
export function compareOf(s: Series, own: string, o: Other, mode: XMode): Plot {
  const keyed = (x: Series) => {
    const m = new Map<number, number>();
    const t0 = x.points[0]?.[0] ?? 0;
    x.points.forEach(([t, v], i) => {
      const k = mode === 'time' ? t - t0 : x.steps?.[i];
      if (k !== undefined && k !== null) m.set(k, v);
    });
    return m;
  };
  const a = keyed(s);
  const b = keyed(o.series);
  const xs = [...new Set([...a.keys(), ...b.keys()])].sort((p, q) => p - q);
  return {
    data: [xs, xs.map((x) => a.get(x) ?? null), xs.map((x) => b.get(x) ?? null)] as uPlot.AlignedData,
    labels: [`${s.name} (${own})`, `${s.name} (${o.job})`],
    marks: [],
    spans: [],
  };
}

// smooth is the exponential moving average of ys with weight w (0 < w <
// 1), started again after each gap. Against steps, points another run has
// (null here) are skipped, not gaps.
export function smooth(ys: (number | null | undefined)[], w: number): (number | null)[] {
  let last: number | null = null;
  return ys.map((v) => {
    if (v === null || v === undefined) {
      last = null;
      return null;
    }
    last = last === null ? v : w * last + (1 - w) * v;
    return last;
  });
}

// drawn is what uPlot draws: on a log scale only positive values, and with
// smoothing each line faded beside its average.
function drawn(p: Plot, o: ChartOptions, comparing: boolean): { data: uPlot.AlignedData; series: uPlot.Series[] } {
  const ys = p.data.slice(1).map((y) => (o.log ? Array.from(y, (v) => (v !== null && v !== undefined && v > 0 ? v : null)) : Array.from(y)));
  const gaps = o.mode === 'step' || comparing; // lines share the x values: span the others' points
  const data: (number | null | undefined)[][] = [Array.from(p.data[0] as number[])];
  const series: uPlot.Series[] = [{ label: comparing && o.mode === 'time' ? 'since the first point' : o.mode }];
  const points = { show: p.data[0].length <= 60, size: 5 };
  ys.forEach((y, i) => {
    const color = COLORS[i % COLORS.length];
    if (o.smoothing > 0) {
      data.push(y, gaps ? smoothRun(y, o.smoothing) : smooth(y, o.smoothing));
      series.push({ label: p.labels[i], stroke: color + '59', width: 1, spanGaps: gaps, points: { show: false } });
      series.push({ label: `${p.labels[i]} (smoothed)`, stroke: color, width: 2, spanGaps: gaps, points: { show: false } });
    } else {
      data.push(y);
      series.push({ label: p.labels[i], stroke: color, width: 2, spanGaps: gaps, points });
    }
  });
  return { data: data as uPlot.AlignedData, series };
}

// smoothRun smooths one run against steps: its own points, skipping the
// steps only other runs have.
function smoothRun(y: (number | null | undefined)[], w: number): (number | null)[] {
  const idx = y.flatMap((v, i) => (v === null || v === undefined ? [] : [i]));
  const sm = smooth(idx.map((i) => y[i]), w);
  const out: (number | null)[] = y.map(() => null);
  idx.forEach((i, k) => (out[i] = sm[k]));
  return out;
}

function marksPlugin(plot: () => Plot): uPlot.Plugin {
  return {
    hooks: {
      draw: (u: uPlot) => {
        const ctx = u.ctx;
        const { left, top, width, height } = u.bbox;
        ctx.save();
        ctx.fillStyle = SUSPENDED;
        for (const [from, to] of plot().spans) {
          const x0 = Math.max(left, u.valToPos(from, 'x', true));
          const x1 = Number.isFinite(to) ? Math.min(left + width, u.valToPos(to, 'x', true)) : left + width;
          if (x1 > x0) ctx.fillRect(x0, top, x1 - x0, height);
        }
        ctx.strokeStyle = RESTART;
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
        for (const m of plot().marks) {
          const x = Math.round(u.valToPos(m, 'x', true));
          if (x < left || x > left + width) continue;
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
        }
        ctx.restore();
      },
    },
  };
}

export function MetricChart(props: { series: Series; job: string; restarts: number[]; suspensions: Span[]; options: ChartOptions; other?: Other }) {
  const { series, restarts, suspensions, options, other } = props;
  const { mode } = options;
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const laid = useMemo(
    () => (other ? compareOf(series, props.job, other, mode) : plotOf(series, restarts, suspensions, mode)),
    [series, restarts, suspensions, mode, other],
  );
  const shown = useMemo(() => drawn(laid, options, !!other), [laid, options.log, options.smoothing]);
  const current = useRef(laid);
  current.current = laid;
  const elapsed = !!other && mode === 'time';
  const shape = `${mode}:${options.log}:${options.smoothing}:${laid.labels.join('|')}`;

  useLayoutEffect(() => {
    const el = box.current!;
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 220,
      scales: {
        x: {
          time: mode === 'time' && !elapsed,
          // Widened to show a restart or a suspension after the last point.
          range: (_u, min, max) => {
            const m = [...current.current.marks, ...current.current.spans.map(([from]) => from)];
            return m.length ? [Math.min(min, ...m), Math.max(max, ...m)] : [min, max];
          },
        },
        y: options.log ? { distr: 3, log: 10 } : {},
      },
      legend: { show: shown.series.length > 2 },
      cursor: { drag: { x: false, y: false } },
      axes: [
        {
          stroke: '#3d444d',
          grid: { stroke: '#e6e8eb' },
          ticks: { stroke: '#d0d4d9' },
          label: mode === 'step' ? 'step' : elapsed ? 'since the first point' : undefined,
          // Room for a label (14:03:27) between two ticks.
          space: mode === 'time' ? 90 : 60,
          // Times of day, 24-hour; seconds when the ticks are that close.
          values:
            mode === 'step' ? undefined
            : elapsed ? (_u, splits) => splits.map((v) => duration(v))
            : (_u, splits, _ax, _space, incr) => splits.map((v) => clock(v, incr < 60)),
        },
        { stroke: '#3d444d', grid: { stroke: '#e6e8eb' }, ticks: { stroke: '#d0d4d9' }, size: 64 },
      ],
      series: shown.series,
      plugins: [marksPlugin(() => current.current)],
    };
    plot.current = new uPlot(opts, shown.data, el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(280, el.clientWidth), height: 220 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(shown.data);
  }, [shown]);

  const n = series.points.length;
  const last = series.points[n - 1];
  const lastStep = series.steps?.[n - 1];
  const marked = laid.marks.length;
  return (
    <figure class="chart" data-metric={series.name} data-points={n} data-compared={other ? other.series.points.length : undefined} data-restarts={mode === 'time' ? marked : undefined}
      data-suspensions={mode === 'time' ? laid.spans.length : undefined}>
      <figcaption>
        <strong>{series.name}</strong>{' '}
        {last ? (
          <span class="muted">
            latest <span class="mono">{fmt(last[1])}</span>
            {lastStep !== undefined && lastStep !== null ? ` at step ${lastStep}` : ''}, {n} {n === 1 ? 'point' : 'points'}
            {mode === 'time' && marked > 0 ? `, ${marked} restart${marked > 1 ? 's' : ''} marked` : ''}
            {mode === 'time' && laid.spans.length > 0 ? `, ${laid.spans.length} suspension${laid.spans.length > 1 ? 's' : ''} shaded` : ''}
            {mode === 'step' && marked > 0 ? `, ${marked} later run${marked > 1 ? 's' : ''} marked` : ''}
          </span>
        ) : (
          <span class="muted">no points yet</span>
        )}
        {mode === 'step' && laid.data[0].length === 0 && n > 0 && <span class="muted"> (the program reported no steps)</span>}
      </figcaption>
      <div ref={box} class="plot" aria-hidden="true" />
      <details class="data">
        <summary>Data of {series.name}</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">time</th>
              <th scope="col">step</th>
              <th scope="col">{series.name}</th>
            </tr>
          </thead>
          <tbody>
            {series.points.map(([t, v], i) => (
              <tr key={i}>
                <td>{clock(t)}</td>
                <td>{series.steps?.[i] ?? '-'}</td>
                <td class="mono" data-value={v}>{fmt(v)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

function fmt(v: number): string {
  return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : String(Number(v.toPrecision(6)));
}
