'use client';

import type { Operation } from '../lib/api/index.ts';
import { formatRelative, formatUtc, operationTiming } from '../lib/dashboard/time-format.ts';
import { useNow } from '../lib/dashboard/use-agent.ts';

function localTime(at: number): string {
  return new Date(at).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** A time shown relative ("3 min ago"), with the absolute local and UTC time on hover. */
export function RelativeTime({ at, fallback = '—' }: { at: number | null; fallback?: string }) {
  const now = useNow(1000);
  if (at === null) return <span>{fallback}</span>;
  return (
    <time dateTime={new Date(at).toISOString()} title={`${localTime(at)} (${formatUtc(at)})`} suppressHydrationWarning>
      {formatRelative(at, now)}
    </time>
  );
}

/** A live countdown for an operation: "retry in 0:57", "running 3 s", "retry due". */
export function OperationCountdown({ op }: { op: Pick<Operation, 'state' | 'retryAt' | 'startedAt'> }) {
  const now = useNow(1000);
  const timing = operationTiming(op, now);
  const at = op.state === 'running' ? op.startedAt : op.retryAt;
  return (
    <span
      className={`countdown countdown--${timing.kind}`}
      role="timer"
      title={at === null ? undefined : `${op.state === 'running' ? 'started' : 'retry allowed after'} ${localTime(at)} (${formatUtc(at)})`}
      suppressHydrationWarning
    >
      {timing.text}
    </span>
  );
}

/** A clock time ("08:01:03"), with the full local and UTC time on hover. */
export function AbsoluteTime({ at }: { at: number }) {
  return (
    <time dateTime={new Date(at).toISOString()} title={`${localTime(at)} (${formatUtc(at)})`} suppressHydrationWarning>
      {new Date(at).toLocaleTimeString()}
    </time>
  );
}
