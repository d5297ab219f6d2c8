/**
 * Text for times and countdowns. Every function takes `now` explicitly (pure, testable with
 * fixed numbers); agent times (`retryAt`, `startedAt`) are compared with the browser's clock,
 * assuming the two are synchronized (NTP), as the kubelet's own messages do.
 */
import type { Operation } from '../api/index.ts';

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/** `m:ss` (or `h:mm:ss` from one hour) for a non-negative number of whole seconds. */
export function formatClock(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${pad2(m)}:${pad2(sec)}` : `${m}:${pad2(sec)}`;
}

/** A duration in words: `3 s`, `2 min 5 s`, `1 h 4 min`. Negative durations count as 0. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
}

/** Where an operation stands in time. */
export type OperationTiming =
  /** In backoff; a retry is allowed after `retryAt` (`text`: `retry in 0:57`). */
  | { kind: 'retry-in'; text: string; remainingMs: number }
  /** In backoff and `retryAt` has passed: the next reconciler pass retries it. */
  | { kind: 'retry-due'; text: string }
  /** Running since `startedAt` (`text`: `running 3 s`). */
  | { kind: 'running'; text: string; elapsedMs: number }
  /** No timing known (running without a start time, backoff without a deadline). */
  | { kind: 'none'; text: string };

/**
 * The countdown text of an operation at `now`: `retry in 0:57` (seconds rounded up, so it
 * never shows 0:00 while still waiting), `retry due` once `now >= retryAt`, `running 3 s`
 * (rounded down) while running.
 */
export function operationTiming(op: Pick<Operation, 'state' | 'retryAt' | 'startedAt'>, now: number): OperationTiming {
  if (op.state === 'running') {
    if (op.startedAt === null) return { kind: 'none', text: 'running' };
    const elapsedMs = Math.max(0, now - op.startedAt);
    return { kind: 'running', text: `running ${formatDuration(elapsedMs)}`, elapsedMs };
  }
  if (op.retryAt === null) return { kind: 'none', text: 'in backoff' };
  const remainingMs = op.retryAt - now;
  if (remainingMs <= 0) return { kind: 'retry-due', text: 'retry due' };
  return { kind: 'retry-in', text: `retry in ${formatClock(Math.ceil(remainingMs / 1000))}`, remainingMs };
}

/** `just now`, `12 s ago`, `3 min ago`, `in 2 min`, `2 d ago`: coarse relative time. */
export function formatRelative(at: number, now: number): string {
  const diff = now - at;
  const abs = Math.abs(diff);
  if (abs < 1000) return 'just now';
  let text: string;
  if (abs < 60_000) text = `${Math.floor(abs / 1000)} s`;
  else if (abs < 3_600_000) text = `${Math.floor(abs / 60_000)} min`;
  else if (abs < 86_400_000) text = `${Math.floor(abs / 3_600_000)} h`;
  else text = `${Math.floor(abs / 86_400_000)} d`;
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}

/** `2026-11-30 08:01:03 UTC`: an absolute time that reads the same everywhere. */
export function formatUtc(at: number): string {
  return `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
