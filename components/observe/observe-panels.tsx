'use client';

import { useMutation } from '@tanstack/react-query';
import Link from 'next/link';
import { memo, useCallback, useId, useMemo, useState, type CSSProperties, type ReactNode } from 'react';
import { isAgentApiError } from '../../lib/api/index.ts';
import type { OrphanCleanupResponse } from '../../lib/api/actions.ts';
import type { KubeletBackoff, Observe, OrphanPod, PlannedOperation, TruthDiffRow } from '../../lib/api/observe.ts';
import { orphanCleanupMutationOptions } from '../../lib/dashboard/actions-client.ts';
import { isAgentUnavailableError } from '../../lib/dashboard/dashboard-error.ts';
import {
  OBSERVE_BANNER,
  OBSERVE_ROW_CAP,
  backoffBasisNote,
  capRows,
  describeOrphanCleanup,
  durationBeforeRetryText,
  failedChecks,
  findingSeverityLabel,
  kubeletBackoffTiming,
  orphanCleanupAvailability,
  orphanVerdictLabel,
  orphanVolumeDetail,
  orphanVolumeStateLabel,
  outstandingText,
  sortOrphans,
  sortPlan,
  summarizeCleanupResult,
  truthDiffCounts,
  truthDiffRowsShown,
  type ObserveActionAvailability,
  type StateLabel,
} from '../../lib/dashboard/observe-view.ts';
import { podHref } from '../../lib/dashboard/routes.ts';
import { formatUtc } from '../../lib/dashboard/time-format.ts';
import { useAgentConnection, useNow } from '../../lib/dashboard/use-agent.ts';
import { ActionButton } from '../dialogs/action-dialog.tsx';
import { Panel } from '../node/operations-table.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { ConfirmDialog } from '../dialogs/confirm-dialog.tsx';

// Live texts keep their width while they count (tabular digits, a minimum width of their longest
// usual text), so neither the row nor the table column moves every second.
const OUTSTANDING_STYLE: CSSProperties = { minWidth: '23ch' };
const RETRY_STYLE: CSSProperties = { minWidth: '13ch' };
const LIST_STYLE: CSSProperties = { listStyle: 'none', margin: 0, padding: 0 };

const TONE_CLASS: Record<StateLabel['tone'], string> = {
  bad: 'badge--backoff',
  warn: 'badge--uncertain',
  info: 'badge--running',
  ok: 'badge--ready',
  neutral: 'badge--waiting',
};

/** A state as icon + word (the colour only repeats what the word says). */
function StateBadge({ state }: { state: StateLabel }) {
  return (
    <span className={`badge ${TONE_CLASS[state.tone]}`}>
      <span className="badge__icon" aria-hidden="true">
        {state.icon}
      </span>
      {state.label}
    </span>
  );
}

function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** A yes/no fact as icon + words: `✓ attached`, `– not listed`. */
function Mark({ on, children }: { on: boolean; children: ReactNode }) {
  return (
    <span>
      <span aria-hidden="true">{on ? '✓ ' : '– '}</span>
      {children}
    </span>
  );
}

/**
 * "Showing the first 200 of 950" and the button that shows all (or the first 200 again).
 * Nothing when the list is not longer than the cap.
 */
function ShowAllToggle({ total, showAll, onToggle, what, controls }: { total: number; showAll: boolean; onToggle: () => void; what: string; controls: string }) {
  if (total <= OBSERVE_ROW_CAP) return null;
  return (
    <p className="muted">
      {showAll ? `Showing all ${total} ${what}. ` : `Showing the first ${OBSERVE_ROW_CAP} of ${total} ${what}. `}
      <button type="button" className="button button--small" aria-expanded={showAll} aria-controls={controls} onClick={onToggle}>
        {showAll ? `Show the first ${OBSERVE_ROW_CAP} only` : `Show all ${total}`}
      </button>
    </p>
  );
}

// PLAN

/** "outstanding for 3m 12s", live. */
function OutstandingFor({ since }: { since: number }) {
  const now = useNow(1000);
  return (
    <span className="countdown" role="timer" style={OUTSTANDING_STYLE} title={`planned without interruption since ${formatUtc(since)}`} suppressHydrationWarning>
      {outstandingText(since, now)}
    </span>
  );
}

/** "retry in 0:57" until the kubelet's `retryAt`, then "retry due", live. */
function KubeletRetryCountdown({ backoff }: { backoff: KubeletBackoff }) {
  const now = useNow(1000);
  const timing = kubeletBackoffTiming(backoff, now);
  return (
    <span className={`countdown countdown--${timing.kind}`} role="timer" style={RETRY_STYLE} title={`No retries permitted until ${formatUtc(backoff.retryAt)}`} suppressHydrationWarning>
      {timing.text}
    </span>
  );
}

function KubeletBackoffCell({ backoff }: { backoff: KubeletBackoff | null }) {
  if (backoff === null) return <span className="muted">none known</span>;
  const note = backoffBasisNote(backoff);
  return (
    <>
      <KubeletRetryCountdown backoff={backoff} /> <span className="muted">{durationBeforeRetryText(backoff)}</span>
      {note !== null ? <span className="muted"> {note}</span> : null}
      <div className="error-text">{backoff.error}</div>
      {backoff.observedAt !== null ? (
        <div className="muted small">
          event seen <RelativeTime at={backoff.observedAt} />
        </div>
      ) : null}
    </>
  );
}

const PlanRow = memo(function PlanRow({ node, op }: { node: string; op: PlannedOperation }) {
  return (
    <tr className={op.kubeletBackoff !== null ? 'row--backoff' : undefined}>
      <td>
        <code>{op.operation}</code>
      </td>
      <td className="cell-wrap">
        <code>{op.volume}</code>
      </td>
      <td className="cell-wrap">
        {op.podUid === null ? '—' : (
          <>
            <Link href={podHref(node, op.podUid)} title={`pod uid ${op.podUid}`}>
              {op.pod ?? op.podUid}
            </Link>
            {op.outerVolumeName !== null ? <div className="muted small">as {op.outerVolumeName}</div> : null}
          </>
        )}
      </td>
      <td className="cell-wrap">{op.reason}</td>
      <td>
        <OutstandingFor since={op.since} />
      </td>
      <td className="cell-error">
        <KubeletBackoffCell backoff={op.kubeletBackoff} />
      </td>
    </tr>
  );
});

function PlanPanel({ node, observe }: { node: string; observe: Observe }) {
  const [showAll, setShowAll] = useState(false);
  const tableId = useId();
  const sorted = useMemo(() => sortPlan(observe.plan), [observe.plan]);
  const { shown } = capRows(sorted, showAll);
  return (
    <Panel id="observe-plan" title="Kubelet’s outstanding work (plan)" count={observe.plan.length}>
      <p className="blocking" role="note">
        <span aria-hidden="true">◎ </span>
        {OBSERVE_BANNER}
      </p>
      <p className="facts">
        <span>
          {observe.refreshedAt === null ? (
            'not refreshed yet'
          ) : (
            <>
              refreshed <RelativeTime at={observe.refreshedAt} />
            </>
          )}
        </span>
        <span>
          kubelet root dir <code>{observe.kubeletRootDir}</code> (read only)
        </span>
      </p>
      {observe.refreshError !== null ? (
        <p className="error-block">
          <span aria-hidden="true">✕ </span>
          The last refresh failed; what is shown is from the refresh before: {observe.refreshError}
        </p>
      ) : null}
      {sorted.length === 0 ? (
        <Empty>The kubelet has no outstanding work: its desired and actual states agree.</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table" id={tableId}>
            <caption className="visually-hidden">Operations the kubelet still has to perform, longest outstanding first</caption>
            <thead>
              <tr>
                <th scope="col">Operation</th>
                <th scope="col">Volume</th>
                <th scope="col">Pod</th>
                <th scope="col">Reason</th>
                <th scope="col">Outstanding</th>
                <th scope="col">Kubelet’s backoff</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((op) => (
                <PlanRow key={op.key} node={node} op={op} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ShowAllToggle
        total={sorted.length}
        showAll={showAll}
        what="operations"
        controls={tableId}
        onToggle={() => {
          setShowAll((v) => !v);
        }}
      />
    </Panel>
  );
}

// ORPHANS

function Checks({ checks }: { checks: readonly { name: string; ok: boolean; detail: string }[] }) {
  if (checks.length === 0) return null;
  return (
    <ul className="checks">
      {checks.map((c) => (
        <li key={c.name} className={c.ok ? 'checks__ok' : 'checks__failed'}>
          <span aria-hidden="true">{c.ok ? '✓ ' : '✕ '}</span>
          <span className="visually-hidden">{c.ok ? 'passed: ' : 'failed: '}</span>
          <code>{c.name}</code> — {c.detail}
        </li>
      ))}
    </ul>
  );
}

/** A refusal's checks: every failed one listed, the passed ones behind a disclosure. */
function RefusalChecks({ checks }: { checks: readonly { name: string; ok: boolean; detail: string }[] }) {
  const failed = failedChecks(checks);
  const passed = checks.filter((c) => c.ok);
  if (checks.length === 0) return null;
  return (
    <>
      {failed.length > 0 ? (
        <p>
          <strong>Failed checks ({failed.length}):</strong>
        </p>
      ) : null}
      <Checks checks={failed} />
      {passed.length > 0 ? (
        <details>
          <summary>Passed checks ({passed.length})</summary>
          <Checks checks={passed} />
        </details>
      ) : null}
    </>
  );
}

function PathList({ title, paths }: { title: string; paths: readonly string[] }) {
  if (paths.length === 0) return null;
  return (
    <>
      <p>
        <strong>{title}</strong>
      </p>
      <ul className="plain-list">
        {paths.map((p) => (
          <li key={p} className="break">
            <code>{p}</code>
          </li>
        ))}
      </ul>
    </>
  );
}

/** The agent's 200 answer: the plan of a dry run, or what was done. */
function CleanupResult({ response }: { response: OrphanCleanupResponse }) {
  const summary = summarizeCleanupResult(response);
  const planned = response.outcome === 'planned';
  return (
    <div className={`result ${summary.tone === 'ok' ? 'result--ok' : 'result--bad'}`} role="status">
      <p>
        <span aria-hidden="true">{summary.icon} </span>
        {summary.headline}
      </p>
      <PathList title={planned ? 'Would unmount (deepest first):' : 'Unmounted:'} paths={response.unmounts} />
      <PathList title={planned ? 'Would remove (empty directories, children first):' : 'Removed (empty directories):'} paths={response.removals} />
      {response.kept.length > 0 ? (
        <>
          <p>
            <strong>Kept:</strong>
          </p>
          <ul className="plain-list">
            {response.kept.map((k) => (
              <li key={k.path} className="break">
                <code>{k.path}</code> — {k.reason}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {response.failures.length > 0 ? (
        <>
          <p>
            <strong>Failures:</strong>
          </p>
          <ul className="plain-list">
            {response.failures.map((f) => (
              <li key={`${f.step}|${f.path}`} className="break error-text">
                <span aria-hidden="true">✕ </span>
                {f.step} <code>{f.path}</code>: {f.message}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <Checks checks={response.checks} />
    </div>
  );
}

/** A refusal (409 with every check), a 404 (not observe mode) or an unreachable agent. */
function CleanupError({ error }: { error: Error }) {
  let heading = 'The cleanup request failed';
  let checks: readonly { name: string; ok: boolean; detail: string }[] = [];
  if (isAgentApiError(error)) {
    heading = error.status === 409 ? 'The agent refused (409); nothing was done' : `The agent answered ${error.status}${error.code !== null ? ` ${error.code}` : ''}`;
    checks = error.checks;
  } else if (isAgentUnavailableError(error)) {
    heading = 'The dashboard could not reach the agent';
  }
  return (
    <div className="result result--bad" role="alert">
      <p>
        <span aria-hidden="true">✕ </span>
        <strong>{heading}:</strong> {error.message}
      </p>
      <RefusalChecks checks={checks} />
    </div>
  );
}

function OrphanVolumesTable({ orphan }: { orphan: OrphanPod }) {
  if (orphan.volumes.length === 0) return <p className="muted">No volume paths.</p>;
  return (
    <div className="table-wrap">
      <table className="table table--compact">
        <caption className="visually-hidden">Volume paths of pod {orphan.podUid}</caption>
        <thead>
          <tr>
            <th scope="col">Volume</th>
            <th scope="col">State</th>
            <th scope="col">What is there</th>
            <th scope="col">Mounts</th>
          </tr>
        </thead>
        <tbody>
          {orphan.volumes.map((v) => (
            <tr key={v.path}>
              <td className="cell-wrap">
                <code>{v.volumeName}</code>
                <div className="muted small">{v.pluginName ?? 'volume-subpaths'}</div>
                <div className="muted small break">{v.path}</div>
              </td>
              <td>
                <StateBadge state={orphanVolumeStateLabel(v.state)} />
              </td>
              <td className="cell-wrap">
                {orphanVolumeDetail(v)}
                <div className="muted small">{v.explanation}</div>
              </td>
              <td className="cell-wrap">
                {v.mounts.length === 0 ? '—' : (
                  <ul className="plain-list">
                    {v.mounts.map((m) => (
                      <li key={m.mountPoint}>
                        <code>{m.mountPoint}</code> <span className="muted">({m.fsType} from {m.source})</span>
                      </li>
                    ))}
                  </ul>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface OrphanCardProps {
  readonly agent: string;
  readonly orphan: OrphanPod;
  readonly availability: ObserveActionAvailability;
  readonly onCleanup: (orphan: OrphanPod) => void;
}

/** One orphaned pod directory: what is in it, and Dry run (result inline) / Clean up (dialog). */
const OrphanCard = memo(function OrphanCard({ agent, orphan, availability, onCleanup }: OrphanCardProps) {
  const titleId = useId();
  const dryRun = useMutation(orphanCleanupMutationOptions(agent));
  return (
    <article className="pipeline-card" aria-labelledby={titleId}>
      <div className="pipeline-card__header">
        <h3 id={titleId}>
          Pod <code>{orphan.podUid}</code>
        </h3>
        <StateBadge state={orphanVerdictLabel(orphan.verdict)} />
        <span className="muted">
          last modified <RelativeTime at={orphan.modifiedAt} />
        </span>
      </div>
      <dl className="facts-grid">
        <dt>Path</dt>
        <dd>
          <code>{orphan.path}</code>
        </dd>
        <dt>Verdict</dt>
        <dd>{orphan.explanation}</dd>
        <dt>Mounts</dt>
        <dd>
          {orphan.mounts.length === 0 ? 'none at or below the pod directory' : (
            <ul className="plain-list">
              {orphan.mounts.map((m) => (
                <li key={m.mountPoint}>
                  <code>{m.mountPoint}</code> <span className="muted">({m.fsType} from {m.source})</span>
                </li>
              ))}
            </ul>
          )}
        </dd>
        {orphan.leftovers.length > 0 ? (
          <>
            <dt>Other entries</dt>
            <dd>{orphan.leftovers.join(', ')}</dd>
          </>
        ) : null}
      </dl>
      <OrphanVolumesTable orphan={orphan} />
      <div className="toolbar">
        <ActionButton
          small
          label="Dry run"
          availability={availability}
          onClick={() => {
            if (!dryRun.isPending) dryRun.mutate({ podUid: orphan.podUid, dryRun: true });
          }}
        />
        <ActionButton
          small
          label="Clean up"
          availability={availability}
          onClick={() => {
            onCleanup(orphan);
          }}
        />
        {!availability.allowed ? (
          // Read to screen readers through each button's description; shown once here.
          <span className="action__reason" aria-hidden="true">
            Not available: {availability.reason}
          </span>
        ) : null}
      </div>
      {dryRun.isPending ? (
        <p role="status">
          <span aria-hidden="true">↻ </span>Dry run: waiting for the agent…
        </p>
      ) : null}
      {dryRun.isSuccess ? <CleanupResult response={dryRun.data} /> : null}
      {dryRun.isError ? <CleanupError error={dryRun.error} /> : null}
    </article>
  );
});

interface PendingCleanup {
  readonly orphan: OrphanPod;
  /** Exactly what will happen, shown verbatim (describeOrphanCleanup). */
  readonly description: string;
}

/** The confirmation dialog of Clean up: the shared ConfirmDialog with the cleanup's result and refusal views. */
function OrphanCleanupDialog({ agent, pending, onClose }: { agent: string; pending: PendingCleanup | null; onClose: () => void }) {
  const mutation = useMutation(orphanCleanupMutationOptions(agent));
  return (
    <ConfirmDialog
      content={
        pending === null ? null : { title: 'Clean up orphaned pod directory', description: pending.description, confirmLabel: 'Clean up', variables: { podUid: pending.orphan.podUid } }
      }
      mutation={mutation}
      renderResult={(response) => <CleanupResult response={response} />}
      renderError={(error) => <CleanupError error={error} />}
      onClose={onClose}
    />
  );
}

function OrphansPanel({ agent, observe, availability }: { agent: string; observe: Observe; availability: ObserveActionAvailability }) {
  const [showAll, setShowAll] = useState(false);
  const [pending, setPending] = useState<PendingCleanup | null>(null);
  const listId = useId();
  const sorted = useMemo(() => sortOrphans(observe.orphans), [observe.orphans]);
  const { shown } = capRows(sorted, showAll);
  const onCleanup = useCallback(
    (orphan: OrphanPod) => {
      setPending({ orphan, description: describeOrphanCleanup(agent, orphan) });
    },
    [agent],
  );
  return (
    <Panel id="observe-orphans" title="Orphaned pod directories" count={observe.orphans.length}>
      {observe.orphansTruncated ? (
        <p className="blocking">
          <span aria-hidden="true">! </span>
          The inspection budget ran out: some pod directories were not inspected, so this list is incomplete.
        </p>
      ) : null}
      {sorted.length === 0 ? (
        <Empty>No orphaned pod directories: every pods/&lt;uid&gt; directory belongs to a pod the API server knows.</Empty>
      ) : (
        <ul className="pipelines" style={LIST_STYLE} id={listId} aria-label="Orphaned pod directories, most dangerous first">
          {shown.map((o) => (
            <li key={o.podUid}>
              <OrphanCard agent={agent} orphan={o} availability={availability} onCleanup={onCleanup} />
            </li>
          ))}
        </ul>
      )}
      <ShowAllToggle
        total={sorted.length}
        showAll={showAll}
        what="orphaned pod directories"
        controls={listId}
        onToggle={() => {
          setShowAll((v) => !v);
        }}
      />
      <OrphanCleanupDialog
        agent={agent}
        pending={pending}
        onClose={() => {
          setPending(null);
        }}
      />
    </Panel>
  );
}

// TRUTH DIFF

function VolumeAttachmentsCell({ vas }: { vas: TruthDiffRow['volumeAttachments'] }) {
  if (vas.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="plain-list">
      {vas.map((va) => (
        <li key={va.name}>
          <code>{va.name}</code>: <Mark on={va.attached}>{va.attached ? 'attached' : 'not attached'}</Mark>
          {va.deleting ? (
            <span>
              {' '}
              · <span aria-hidden="true">⏏ </span>deleting
            </span>
          ) : null}
          {va.attachError !== null ? (
            <div className="error-text">
              <span aria-hidden="true">✕ </span>attachError: {va.attachError}
            </div>
          ) : null}
          {va.detachError !== null ? (
            <div className="error-text">
              <span aria-hidden="true">✕ </span>detachError: {va.detachError}
            </div>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

function MountsCell({ node, row }: { node: string; row: TruthDiffRow }) {
  if (row.globalMounts.length === 0 && row.podMounts.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="plain-list">
      {row.globalMounts.map((m) => (
        <li key={`g|${m}`}>
          global: <code>{m}</code>
        </li>
      ))}
      {row.podMounts.map((m) => (
        <li key={`p|${m.podUid}|${m.mountPoint}`}>
          pod <Link href={podHref(node, m.podUid)}>{m.podUid}</Link>: <code>{m.mountPoint}</code>
        </li>
      ))}
    </ul>
  );
}

const TruthRow = memo(function TruthRow({ node, row }: { node: string; row: TruthDiffRow }) {
  return (
    <tr className={row.findings.some((f) => f.severity === 'error') ? 'row--backoff' : undefined}>
      <td className="cell-wrap">
        <code>{row.volume ?? row.key}</code>
      </td>
      <td className="cell-wrap">
        {row.desiredPods === null ? (
          <span className="muted">not desired</span>
        ) : (
          <ul className="plain-list">
            {row.desiredPods.map((uid) => (
              <li key={uid}>
                <Link href={podHref(node, uid)}>{uid}</Link>
              </li>
            ))}
          </ul>
        )}
      </td>
      <td>
        <Mark on={row.inUse}>{row.inUse ? 'in use' : 'not in use'}</Mark>
      </td>
      <td className="cell-wrap">
        {row.attachedDevicePath === null ? (
          <Mark on={false}>not listed</Mark>
        ) : (
          <>
            <Mark on>attached</Mark>
            {row.attachedDevicePath !== '' ? (
              <div>
                <code>{row.attachedDevicePath}</code>
              </div>
            ) : null}
          </>
        )}
      </td>
      <td className="cell-wrap">
        <VolumeAttachmentsCell vas={row.volumeAttachments} />
      </td>
      <td className="cell-wrap">
        <MountsCell node={node} row={row} />
      </td>
      <td className="cell-error">
        {row.findings.length === 0 ? (
          <Mark on>all sources agree</Mark>
        ) : (
          <ul className="plain-list" style={LIST_STYLE}>
            {row.findings.map((f) => (
              <li key={f.code}>
                <StateBadge state={findingSeverityLabel(f.severity)} /> <code>{f.code}</code>
                <div>{f.explanation}</div>
              </li>
            ))}
          </ul>
        )}
      </td>
    </tr>
  );
});

function TruthDiffPanel({ node, observe }: { node: string; observe: Observe }) {
  const [showAllRows, setShowAllRows] = useState(false);
  const [uncapped, setUncapped] = useState(false);
  const toggleId = useId();
  const tableId = useId();
  const counts = useMemo(() => truthDiffCounts(observe.truthDiff), [observe.truthDiff]);
  const rows = useMemo(() => truthDiffRowsShown(observe.truthDiff, showAllRows), [observe.truthDiff, showAllRows]);
  const { shown } = capRows(rows, uncapped);
  return (
    <Panel
      id="observe-truth"
      title="Node truth diff"
      count={counts.withFindings}
      actions={
        <span className="filters">
          <input
            id={toggleId}
            type="checkbox"
            checked={showAllRows}
            aria-controls={tableId}
            onChange={(e) => {
              setShowAllRows(e.currentTarget.checked);
            }}
          />
          <label htmlFor={toggleId}>Show volumes without findings too</label>
        </span>
      }
    >
      <p className="muted">
        Each volume compared across the agent’s view (desired pods, mounts from mountinfo), the node’s <code>status.volumesInUse</code> and{' '}
        <code>status.volumesAttached</code>, and its VolumeAttachments. {counts.withFindings} of {counts.total} rows have findings.
      </p>
      {rows.length === 0 ? (
        <Empty>{counts.total === 0 ? 'Nothing to compare yet.' : `Every source agrees for all ${counts.total} volumes: no findings.`}</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table" id={tableId}>
            <caption className="visually-hidden">
              {showAllRows ? 'Every volume' : 'Volumes with findings'}, worst severity first
            </caption>
            <thead>
              <tr>
                <th scope="col">Volume</th>
                <th scope="col">Desired pods</th>
                <th scope="col">volumesInUse</th>
                <th scope="col">volumesAttached</th>
                <th scope="col">VolumeAttachments</th>
                <th scope="col">Mounts</th>
                <th scope="col">Findings</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((row) => (
                <TruthRow key={row.key} node={node} row={row} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ShowAllToggle
        total={rows.length}
        showAll={uncapped}
        what="rows"
        controls={tableId}
        onToggle={() => {
          setUncapped((v) => !v);
        }}
      />
    </Panel>
  );
}

// ENTRY

export interface ObservePanelsProps {
  /** The agent's configured name (the `<node>` of the dashboard's URLs). */
  readonly agent: string;
  /** `snapshot.observe`; `undefined` (managed mode) renders nothing. */
  readonly observe: Observe | undefined;
}

/**
 * The observe-mode panels of the node page: the kubelet's outstanding work (plan) with its own
 * backoff, the orphaned pod directories with the guarded cleanup, and the node truth diff. Panel
 * ids: `observe-plan`, `observe-orphans`, `observe-truth` (for a table of contents).
 */
export const ObservePanels = memo(function ObservePanels({ agent, observe }: ObservePanelsProps) {
  const { phase } = useAgentConnection(agent);
  const cleanupAllowed = observe?.cleanupAllowed ?? false;
  // One object per (flag, phase): the orphan cards are memoized on it.
  const availability = useMemo(() => orphanCleanupAvailability({ cleanupAllowed }, phase), [cleanupAllowed, phase]);
  if (observe === undefined) return null;
  return (
    <>
      <PlanPanel node={agent} observe={observe} />
      <OrphansPanel agent={agent} observe={observe} availability={availability} />
      <TruthDiffPanel node={agent} observe={observe} />
    </>
  );
});
