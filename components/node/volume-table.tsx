'use client';

import { RowLink } from '../shared/row-link.tsx';
import { useRouter } from 'next/navigation';
import { memo, useCallback, useDeferredValue, useEffect, useId, useMemo, useState } from 'react';
import { stageLabel, VOLUME_STATES, rowPodName, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { podHref, volumeHref } from '../../lib/dashboard/routes.ts';
import type { PodNames } from '../../lib/dashboard/pod-refs.ts';
import type { FirstScreenTable } from '../../lib/dashboard/node-first-screen.ts';
import { createNamespacesSelector, createVolumeFiltersSelector, type VolumeSortKey } from '../../lib/dashboard/volume-filters.ts';
import { RetryButton } from '../actions/retry-button.tsx';
import { RowCommandsButton } from '../actions/row-commands-button.tsx';
import { volumeRowTargetText } from '../../lib/dashboard/kube-commands.ts';
import { volumeRowCommandText, type RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import { UnmountButton } from '../actions/unmount-button.tsx';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import { useUrlFilters } from '../hooks/use-url-filters.ts';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { VolumeStateBadge, volumeStateLabel } from '../shared/status-badges.tsx';
import { OperationCountdown } from '../shared/time-text.tsx';
import { VirtualList } from '../shared/virtual-list.tsx';
import { PodRefLink } from '../shared/pod-ref.tsx';

const NO_NAMES: PodNames = new Map();

/**
 * The pod of a row as `namespace/name`: a desired pod's own name; for a mount whose pod is gone
 * (its row has the UID as its name), the name its events recorded, else null (the UID alone).
 */
function rowPodLabel(row: VolumeRow, names: PodNames): string | null {
  if (row.desired) return rowPodName(row);
  return names.get(row.podUid) ?? null;
}

/** Fixed row height of the pods table (px); the windowing depends on it. */
const ROW_HEIGHT = 44;

interface RowContext {
  readonly node: string;
  readonly phase: ConnectionPhase;
  readonly synced: boolean;
  /** The agent runs in observe mode: no Actions column (the kubelet retries and unmounts, the agent does neither). */
  readonly observing?: boolean;
  readonly onAction: (action: PendingAction) => void;
  /** Names of pods that are gone (from their events), for rows the desired state no longer names. */
  readonly podNames: PodNames;
  /** The latest snapshot, read when a row's commands are copied; without it the rows have no Copy commands. */
  readonly commandsSnapshot: (() => RowCommandsSnapshot) | null;
}

const VolumeTableRow = memo(function VolumeTableRow({ row, ctx }: { row: VolumeRow; ctx: RowContext }) {
  const op = row.operation;
  return (
    <>
      <div role="cell" className="vt__cell vt__pod">
        <PodRefLink node={ctx.node} uid={row.podUid} name={rowPodLabel(row, ctx.podNames)} tabIndex={-1} />
        {!row.desired ? <span className="muted small"> not desired</span> : null}
      </div>
      <div role="cell" className="vt__cell vt__volume">
        <RowLink href={volumeHref(ctx.node, row.uniqueVolumeName)} tabIndex={-1} title={row.uniqueVolumeName}>
          {row.volumeName}
        </RowLink>
        <span className="muted small"> {row.pluginName.replace(/^kubernetes\.io\//, '')}</span>
      </div>
      <div role="cell" className="vt__cell vt__state">
        <VolumeStateBadge state={row.state} cause={row.uncertainCause} />
      </div>
      <div role="cell" className="vt__cell vt__stage">
        {row.blocking === null ? '—' : stageLabel(row.blocking.id, row.attachable)}
      </div>
      <div role="cell" className="vt__cell vt__op">
        {op === null ? '—' : (
          <>
            <OperationCountdown op={op} />
            {op.failures > 0 ? <span className="muted small"> · {op.failures}×</span> : null}
          </>
        )}
      </div>
      <div role="cell" className="vt__cell vt__error" title={op?.lastError ?? undefined}>
        {op === null || op.lastError === null ? '' : <ErrorCauseText message={op.lastError} variant="cell" />}
      </div>
      {ctx.observing === true ? null : (
        <div role="cell" className="vt__cell vt__actions">
          {op !== null ? <RetryButton node={ctx.node} op={op} podName={rowPodLabel(row, ctx.podNames)} volumeName={row.volumeName} phase={ctx.phase} onAction={ctx.onAction} /> : null}
          {!row.desired ? <UnmountButton node={ctx.node} row={row} podName={rowPodLabel(row, ctx.podNames)} phase={ctx.phase} synced={ctx.synced} observing={false} onAction={ctx.onAction} /> : null}
        </div>
      )}
      <div role="cell" className="vt__cell vt__commands">
        {ctx.commandsSnapshot === null ? null : <RowCommands row={row} ctx={ctx} snapshot={ctx.commandsSnapshot} />}
      </div>
    </>
  );
});

/** The row's Copy commands (kubectl, and the agent's log or the kubelet's journal). */
function RowCommands({ row, ctx, snapshot }: { row: VolumeRow; ctx: RowContext; snapshot: () => RowCommandsSnapshot }) {
  const podName = rowPodLabel(row, ctx.podNames);
  return <RowCommandsButton target={volumeRowTargetText({ volumeName: row.volumeName, podName, podUid: row.podUid })} getText={() => volumeRowCommandText(ctx.node, row, podName, snapshot())} />;
}

const COLUMNS: { key: VolumeSortKey | null; label: string; className: string }[] = [
  { key: 'pod', label: 'Pod', className: 'vt__pod' },
  { key: 'volume', label: 'Volume', className: 'vt__volume' },
  { key: 'state', label: 'State', className: 'vt__state' },
  { key: null, label: 'Blocking stage', className: 'vt__stage' },
  { key: 'retry', label: 'Next retry', className: 'vt__op' },
  { key: null, label: 'Last error', className: 'vt__error' },
  { key: null, label: 'Actions', className: 'vt__actions' },
  { key: null, label: 'Commands', className: 'vt__commands' },
];

/** The columns of the mode: observe mode has no Actions (no Retry now, no Unmount). */
export function volumeTableColumns(observing: boolean): typeof COLUMNS {
  return observing ? COLUMNS.filter((c) => c.className !== 'vt__actions') : COLUMNS;
}

export interface VolumeTableProps {
  readonly node: string;
  readonly rows: readonly VolumeRow[];
  readonly phase: ConnectionPhase;
  readonly synced: boolean;
  /** The agent runs in observe mode: no Actions column. */
  readonly observing?: boolean;
  readonly onAction: (action: PendingAction) => void;
  /** Names of pods that are gone (from their events), for rows the desired state no longer names. */
  readonly podNames?: PodNames;
  /** The latest snapshot (`useLatest`), read when a row's commands are copied. */
  readonly commandsSnapshot?: () => RowCommandsSnapshot;
  /**
   * The server's first screen (node-first-screen.ts): `rows` are then only its first rows under
   * the URL's filters, and the counts and namespaces are the whole node's.
   */
  readonly firstScreen?: Pick<FirstScreenTable, 'shown' | 'total' | 'namespaces'>;
}

/**
 * One mount-pipeline row per (pod, volume), filterable by namespace, state and text and sortable,
 * all kept in the URL (`?ns=&state=&q=&sort=&dir=`). Rows are windowed and memoized by their
 * stable id, so a node with 10,000 rows stays smooth while deltas stream in.
 */
export function VolumeTable({ node, rows, phase, synced, observing = false, onAction, podNames = NO_NAMES, commandsSnapshot, firstScreen }: VolumeTableProps) {
  const [filters, setFilters] = useUrlFilters();
  const [text, setText] = useState(filters.q);
  const searchId = useId();
  useEffect(() => {
    setText(filters.q);
  }, [filters.q]);
  useEffect(() => {
    if (text.trim() === filters.q) return;
    const timer = setTimeout(() => {
      setFilters({ ...filters, q: text.trim() });
    }, 250);
    return () => {
      clearTimeout(timer);
    };
  }, [text, filters, setFilters]);

  const deferredRows = useDeferredValue(rows);
  // Selectors with memory: a flush that changes a few rows updates the previous result instead of
  // filtering and sorting every row again (see createVolumeFiltersSelector).
  const [selectShown] = useState(createVolumeFiltersSelector);
  const [selectNamespaces] = useState(createNamespacesSelector);
  const ownNamespaces = useMemo(() => selectNamespaces(deferredRows), [selectNamespaces, deferredRows]);
  const namespaces = firstScreen?.namespaces ?? ownNamespaces;
  const shown = useMemo(() => selectShown(deferredRows, filters), [selectShown, deferredRows, filters]);
  const total = firstScreen?.total ?? rows.length;
  const shownCount = firstScreen?.shown ?? shown.length;
  const ctx = useMemo<RowContext>(
    () => ({ node, phase, synced, observing, onAction, podNames, commandsSnapshot: commandsSnapshot ?? null }),
    [node, phase, synced, observing, onAction, podNames, commandsSnapshot],
  );
  const renderRow = useCallback((row: VolumeRow) => <VolumeTableRow row={row} ctx={ctx} />, [ctx]);
  const getKey = useCallback((row: VolumeRow) => row.id, []);
  const router = useRouter();
  const openPod = useCallback(
    (row: VolumeRow) => {
      router.push(podHref(node, row.podUid));
    },
    [router, node],
  );

  const sortBy = (key: VolumeSortKey): void => {
    setFilters({ ...filters, sort: key, dir: filters.sort === key && filters.dir === 'asc' ? 'desc' : 'asc' });
  };
  const filtered = filters.ns !== null || filters.state !== null || filters.q !== '';

  return (
    <div className={observing ? 'vt vt--observe' : 'vt'}>
      <div className="filters" role="search" aria-label="Filter pods and volumes">
        <label>
          Namespace{' '}
          <select
            value={filters.ns ?? ''}
            onChange={(e) => {
              setFilters({ ...filters, ns: e.target.value === '' ? null : e.target.value });
            }}
          >
            <option value="">all</option>
            {namespaces.map((ns) => (
              <option key={ns} value={ns}>
                {ns}
              </option>
            ))}
            {filters.ns !== null && !namespaces.includes(filters.ns) ? <option value={filters.ns}>{filters.ns}</option> : null}
          </select>
        </label>
        <label>
          State{' '}
          <select
            value={filters.state ?? ''}
            onChange={(e) => {
              const value = VOLUME_STATES.find((s) => s === e.target.value) ?? null;
              setFilters({ ...filters, state: value });
            }}
          >
            <option value="">all</option>
            {VOLUME_STATES.map((s) => (
              <option key={s} value={s}>
                {volumeStateLabel(s)}
              </option>
            ))}
          </select>
        </label>
        <label htmlFor={searchId}>Search</label>
        <input
          id={searchId}
          type="search"
          value={text}
          placeholder="pod, namespace, volume, uid, error…"
          onChange={(e) => {
            setText(e.target.value);
          }}
        />
        {filtered ? (
          <button
            type="button"
            className="button button--small"
            onClick={() => {
              setText('');
              setFilters({ ...filters, ns: null, state: null, q: '' });
            }}
          >
            Clear filters
          </button>
        ) : null}
        <span className="muted" role="status">
          {shownCount === total ? `${total} rows` : `${shownCount} of ${total} rows`}
        </span>
      </div>
      <div className="vt__table" role="table" aria-label="Pods and volumes" aria-rowcount={shownCount + 1}>
        <div role="rowgroup">
          <div role="row" className="vt__head" aria-rowindex={1}>
            {volumeTableColumns(observing).map((c) => {
              const active = c.key !== null && filters.sort === c.key;
              return (
                <div
                  key={c.label}
                  role="columnheader"
                  className={`vt__cell ${c.className}`}
                  aria-sort={active ? (filters.dir === 'asc' ? 'ascending' : 'descending') : undefined}
                >
                  {c.key === null ? (
                    c.label === 'Actions' || c.label === 'Commands' ? <span className="visually-hidden">{c.label}</span> : c.label
                  ) : (
                    <button
                      type="button"
                      className="sort-button"
                      onClick={() => {
                        if (c.key !== null) sortBy(c.key);
                      }}
                    >
                      {c.label}
                      <span aria-hidden="true">{active ? (filters.dir === 'asc' ? ' ▲' : ' ▼') : ' ↕'}</span>
                    </button>
                  )}
                </div>
              );
            })}
          </div>
        </div>
        {shownCount === 0 ? (
          <EmptyState>{total === 0 ? 'No pod on this node has volumes.' : 'No row matches the filters.'}</EmptyState>
        ) : (
          <VirtualList items={shown} count={shownCount} rowHeight={ROW_HEIGHT} maxHeight={560} getKey={getKey} renderRow={renderRow} label="Pods and volumes, one row per pod volume; use the arrow keys to move, Enter to open the pod" onActivate={openPod} />
        )}
      </div>
    </div>
  );
}
