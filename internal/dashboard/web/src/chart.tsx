import uPlot from 'uplot';
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { Series } from './api';
import { clock } from './format';

// One metric's curve, drawn with uPlot on a canvas, against time or the
// training step, restarts marked by dashed lines. The numbers are also in a
// table under the chart for those who do not see it.

export type XMode = 'time' | 'step';

// Line colours of at least 4.5:1 contrast on white, one per run.
const COLORS = ['#0b5cad', '#b3261e', '#1a7f37', '#8250df', '#9a6700', '#bc4c00', '#0e7490', '#6e7781'];
const RESTART = '#b3261e';

interface Plot {
  data: uPlot.AlignedData;
  labels: string[];
  marks: number[];
}

// plotOf lays a series out for uPlot. Against time it is one line. Against
// steps each run (the points between two restarts) is a line of its own,
// since a restarted program counts its steps again (from 0, or from its
// checkpoint); marks are where each later run starts.
export function plotOf(s: Series, restarts: number[], mode: XMode): Plot {
  if (mode === 'time') {
    return {
      data: [s.points.map((p) => p[0]), s.points.map((p) => p[1])],
      labels: [s.name],
      // Restarts since the first point, the latest one even when no point
      // came after it yet.
      marks: restarts.filter((t) => t >= (s.points[0]?.[0] ?? Infinity)),
    };
  }
  const runs: Map<number, number>[] = [];
  let runOfLast = -1;
  let before = 0; // restarts before the point
  s.points.forEach(([t, v], i) => {
    while (before < restarts.length && restarts[before] <= t) before++;
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
  };
}

function marksPlugin(marks: () => number[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u: uPlot) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = RESTART;
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
        for (const m of marks()) {
          const x = Math.round(u.valToPos(m, 'x', true));
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
        }
        ctx.restore();
      },
    },
  };
}

export function MetricChart({ series, restarts, mode }: { series: Series; restarts: number[]; mode: XMode }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const laid = useMemo(() => plotOf(series, restarts, mode), [series, restarts, mode]);
  const marks = useRef(laid.marks);
  marks.current = laid.marks;
  const shape = `${mode}:${laid.labels.join('|')}`;

  useLayoutEffect(() => {
    const el = box.current!;
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 220,
      scales: {
        x: {
          time: mode === 'time',
          // Widened to show a restart after the last point.
          range: (_u, min, max) => {
            const m = marks.current;
            return m.length ? [Math.min(min, ...m), Math.max(max, ...m)] : [min, max];
          },
        },
      },
      legend: { show: laid.labels.length > 1 },
      cursor: { drag: { x: false, y: false } },
      axes: [
        {
          stroke: '#3d444d',
          grid: { stroke: '#e6e8eb' },
          ticks: { stroke: '#d0d4d9' },
          label: mode === 'time' ? undefined : 'step',
          // Room for a label (14:03:27) between two ticks.
          space: mode === 'time' ? 90 : 60,
          // Times of day, 24-hour; seconds when the ticks are that close.
          values: mode === 'time' ? (_u, splits, _ax, _space, incr) => splits.map((v) => clock(v, incr < 60)) : undefined,
        },
        { stroke: '#3d444d', grid: { stroke: '#e6e8eb' }, ticks: { stroke: '#d0d4d9' }, size: 64 },
      ],
      series: [
        { label: mode === 'time' ? 'time' : 'step' },
        ...laid.labels.map((label, i) => ({
          label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          spanGaps: true,
          points: { show: laid.data[0].length <= 60, size: 5 },
        })),
      ],
      plugins: [marksPlugin(() => marks.current)],
    };
    plot.current = new uPlot(opts, laid.data, el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(280, el.clientWidth), height: 220 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(laid.data);
  }, [laid]);

  const n = series.points.length;
  const last = series.points[n - 1];
  const lastStep = series.steps?.[n - 1];
  return (
    <figure class="chart" data-metric={series.name} data-points={n}>
      <figcaption>
        <strong>{series.name}</strong>{' '}
        {last ? (
          <span class="muted">
            latest <span class="mono">{fmt(last[1])}</span>
            {lastStep !== undefined && lastStep !== null ? ` at step ${lastStep}` : ''}, {n} {n === 1 ? 'point' : 'points'}
            {laid.marks.length > 0 ? `, ${laid.marks.length} restart${laid.marks.length > 1 ? 's' : ''} marked` : ''}
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
