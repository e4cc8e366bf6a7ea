// Times and durations as people read them.

export function duration(seconds: number): string {
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  if (m < 60) return s ? `${m}m ${s}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

// age is how long ago t was, in the largest unit or two.
export function age(t: string | undefined, now: number): string {
  if (!t) return '-';
  return duration((now - Date.parse(t)) / 1000);
}

// etaLeft counts a reported ETA down from the time of the report.
export function etaLeft(eta: number | undefined, reportedAt: string | undefined, percent: number | undefined, now: number): number | undefined {
  if (eta === undefined || (percent !== undefined && percent >= 100)) return undefined;
  const since = reportedAt ? (now - Date.parse(reportedAt)) / 1000 : 0;
  return Math.max(0, eta - Math.max(0, since));
}

const pad = (n: number) => String(n).padStart(2, '0');

// clock is a time of day, 24-hour, local: 14:03:27 (14:03 without seconds).
export function clock(t: string | number, seconds = true): string {
  const d = typeof t === 'number' ? new Date(t * 1000) : new Date(t);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}` + (seconds ? `:${pad(d.getSeconds())}` : '');
}

// dateTime is a local date and time: 2026-11-25 14:03:27.
export function dateTime(t: string): string {
  const d = new Date(t);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(t)}`;
}

// useNow ticks every few seconds, for ages and ETAs.
import { useEffect, useState } from 'preact/hooks';
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}
