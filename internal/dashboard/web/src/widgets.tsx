import { StreamState } from './api';

// Phases are told by their word; the colour only helps the eye.
export function PhaseBadge({ phase }: { phase: string }) {
  return <span class={`badge phase-${phase.toLowerCase()}`}>{phase}</span>;
}

export function ProgressBar({ percent, epoch, totalEpochs }: { percent: number; epoch?: number; totalEpochs?: number }) {
  const label = `${percent}%` + (epoch !== undefined ? `, epoch ${epoch}${totalEpochs !== undefined ? ` of ${totalEpochs}` : ''}` : '');
  return (
    <span class="progress">
      <span class="bar" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent} aria-label={label}>
        <span style={{ width: `${Math.min(100, Math.max(0, percent))}%` }} />
      </span>
      <span class="pct">{percent}%</span>
      {epoch !== undefined && (
        <span class="epoch">
          {' '}
          ep {epoch}
          {totalEpochs !== undefined ? `/${totalEpochs}` : ''}
        </span>
      )}
    </span>
  );
}

export function StreamBadge({ state }: { state: StreamState }) {
  const text = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…' }[state];
  return (
    <span class={`stream stream-${state}`} role="status" title="updates come from a watch of the cluster">
      <span aria-hidden="true" class="dot" /> {text}
    </span>
  );
}
