'use client';

import type { Severity, Verdict } from '../../lib/dashboard/attachments/explain.ts';
import { formatDuration, formatUtc } from '../../lib/dashboard/time-format.ts';
import { DataTable } from '../shared/data-table.tsx';

const SEVERITY_LABEL: Record<Severity | 'ok', string> = { blocked: 'blocked', suspect: 'suspect', info: 'note', ok: 'ok' };
const SEVERITY_CLASS: Record<Severity | 'ok', string> = { blocked: 'badge badge--backoff', suspect: 'badge badge--waiting', info: 'badge', ok: 'badge badge--ready' };

export function SeverityBadge({ severity }: { severity: Severity | 'ok' }) {
  return <span className={SEVERITY_CLASS[severity]}>{SEVERITY_LABEL[severity]}</span>;
}

/** The force-detach timer: when it becomes possible, and whether the node qualifies. */
function TimerFacts({ verdict, nowMs }: { verdict: Verdict; nowMs: number }) {
  const t = verdict.timer;
  if (t === null) return null;
  const remaining = t.forceDetachPossibleAtMs - nowMs;
  return (
    <DataTable columns={['Force-detach timer', '']} caption="Force-detach timer" compact>
      <tr>
        <th scope="row">Detach requested</th>
        <td>
          {t.lowerBound ? 'before ' : ''}
          {formatUtc(t.detachRequestedAtMs)}
          {t.lowerBound ? ' (when this dashboard first saw it)' : ''}
        </td>
      </tr>
      <tr>
        <th scope="row">maxWaitForUnmountDuration (6 min) ends</th>
        <td>
          {formatUtc(t.forceDetachPossibleAtMs)} ({remaining > 0 ? `in ${formatDuration(remaining)}` : `${formatDuration(-remaining)} ago`})
        </td>
      </tr>
      <tr>
        <th scope="row">Node qualifies for force detach</th>
        <td>{t.outOfService ? 'yes: out-of-service taint (no wait)' : t.nodeQualifies ? 'yes: not Ready' : 'no: the node is Ready'}</td>
      </tr>
      <tr>
        <th scope="row">Node reports it in use</th>
        <td>{t.mountedByNode ? 'yes' : 'no'}</td>
      </tr>
    </DataTable>
  );
}

/** One verdict: what, why, the evidence, the next step and its checks. */
export function VerdictView({ verdict, nowMs, headingLevel = 3 }: { verdict: Verdict; nowMs: number; headingLevel?: 2 | 3 }) {
  const Heading = headingLevel === 2 ? 'h2' : 'h3';
  return (
    <article className={`panel verdict verdict--${verdict.severity}`} aria-label={verdict.title}>
      <Heading>
        <SeverityBadge severity={verdict.severity} /> {verdict.title}
      </Heading>
      {verdict.explanation.map((line) => (
        <p key={line}>{line}</p>
      ))}
      {verdict.expectedEvent !== null ? (
        <p>
          The attach/detach controller reports it on the waiting pod as <code>Warning FailedAttachVolume</code>: <q>{verdict.expectedEvent}</q>
        </p>
      ) : null}
      <TimerFacts verdict={verdict} nowMs={nowMs} />
      <h4>Evidence</h4>
      <DataTable columns={['What', 'Seen']} caption={`Evidence: ${verdict.title}`} compact>
        {verdict.evidence.map((e) => (
          <tr key={e.label}>
            <th scope="row">{e.label}</th>
            <td>{e.value}</td>
          </tr>
        ))}
      </DataTable>
      <h4>Safe next step</h4>
      <p>{verdict.nextStep}</p>
      {verdict.checks.length > 0 ? (
        <>
          <h4>Before you do it</h4>
          <ul>
            {verdict.checks.map((c) => (
              <li key={c}>{c}</li>
            ))}
          </ul>
        </>
      ) : null}
    </article>
  );
}
