'use client';

import { useMemo } from 'react';
import type { Operation } from '../../lib/api/index.ts';
import { formatRelative, formatUtc, operationTiming } from '../../lib/dashboard/time-format.ts';
import { useNow } from '../../lib/dashboard/use-agent.ts';

// `Date#toLocaleString(undefined, options)` builds a new Intl.DateTimeFormat on every call (about
// a millisecond); with hundreds of times on the node page, re-rendered every second, that was most
// of the page's main-thread time. One formatter gives the same text (same locale, same options).
let localFormat: Intl.DateTimeFormat | null = null;

function localTime(at: number): string {
  localFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  return localFormat.format(at);
}

/** The hover text of a time: local and UTC. */
function fullTime(at: number): string {
  return `${localTime(at)} (${formatUtc(at)})`;
}

/** A time shown relative ("3 min ago"), with the absolute local and UTC time on hover. */
export function RelativeTime({ at, fallback = '—' }: { at: number | null; fallback?: string }) {
  const now = useNow(1000);
  // Only the relative text changes with `now`; the attributes are computed once per time.
  const attrs = useMemo(() => (at === null ? null : { dateTime: new Date(at).toISOString(), title: fullTime(at) }), [at]);
  if (at === null || attrs === null) return <span>{fallback}</span>;
  return (
    <time dateTime={attrs.dateTime} title={attrs.title} suppressHydrationWarning>
      {formatRelative(at, now)}
    </time>
  );
}

/** A live countdown for an operation: "retry in 0:57", "running 3 s", "retry due". */
export function OperationCountdown({ op }: { op: Pick<Operation, 'state' | 'retryAt' | 'startedAt'> }) {
  const now = useNow(1000);
  const timing = operationTiming(op, now);
  const at = op.state === 'running' ? op.startedAt : op.retryAt;
  const title = useMemo(() => (at === null ? undefined : `${op.state === 'running' ? 'started' : 'retry allowed after'} ${fullTime(at)}`), [op.state, at]);
  return (
    <span className={`countdown countdown--${timing.kind}`} role="timer" title={title} suppressHydrationWarning>
      {timing.text}
    </span>
  );
}

let timeOfDayFormat: Intl.DateTimeFormat | null = null;

/** `18:52:21`: the local time of day, 24 h, with seconds. */
export function timeOfDay(at: number): string {
  timeOfDayFormat ??= new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
  return timeOfDayFormat.format(at);
}

/** A time of day, 24 h ("18:52:21"), with the full local and UTC time on hover. */
export function TimeOfDay({ at }: { at: number }) {
  const attrs = useMemo(() => ({ dateTime: new Date(at).toISOString(), title: fullTime(at), text: timeOfDay(at) }), [at]);
  return (
    <time dateTime={attrs.dateTime} title={attrs.title} suppressHydrationWarning>
      {attrs.text}
    </time>
  );
}

/** Live text of `now` (the shared one-second clock), e.g. "stuck for 61 s" or "FailedMount ×9 over 61 s, last 3 s ago". */
export function LiveText({ text, className, role }: { text: (now: number) => string; className?: string; role?: 'timer' }) {
  const now = useNow(1000);
  return (
    <span className={className} role={role} suppressHydrationWarning>
      {text(now)}
    </span>
  );
}

/** A clock time ("08:01:03"), with the full local and UTC time on hover. */
export function AbsoluteTime({ at }: { at: number }) {
  return (
    <time dateTime={new Date(at).toISOString()} title={fullTime(at)} suppressHydrationWarning>
      {new Date(at).toLocaleTimeString()}
    </time>
  );
}
