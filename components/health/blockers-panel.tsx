'use client';

import { useState } from 'react';
import { blockersVerdict, describeHolder, type BlockersReport, type Snapshot } from '../../lib/api/index.ts';
import { fetchBlockers } from '../../lib/dashboard/mount-health-view.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { RelativeTime } from '../shared/time-text.tsx';

const KIND_WORDS = { fd: 'open file', cwd: 'working directory', root: 'root directory', mmap: 'mapped file', 'mount-namespace': 'still mounted in its mount namespace' } as const;

/** One blocker report: the plain-words verdict, then every holder. */
export function BlockersReportView({ report, title }: { report: BlockersReport; title: string }) {
  return (
    <div className="blockers-report">
      <h3>{title}</h3>
      <p role="status" data-testid="blockers-verdict">
        {blockersVerdict(report)}
      </p>
      <p className="small">
        Searched <RelativeTime at={report.checkedAt} /> in {report.durationMs} ms over {report.processesScanned} processes.
      </p>
      {report.holders.length === 0 ? null : (
        <DataTable columns={['PID', 'Command', 'Holds it as', 'Path', 'Container / pod']} caption={`Processes holding ${report.path}`} compact>
          {report.holders.map((h) => (
            <tr key={`${String(h.pid)}|${h.kind}|${h.path}`}>
              <td>{h.pid}</td>
              <td>
                <code className="break">{h.command}</code>
              </td>
              <td>{KIND_WORDS[h.kind]}</td>
              <td>
                <code className="break">{h.path}</code>
              </td>
              <td className="break">{h.container === null ? 'host process' : describeHolder(h).replace(/^pid \d+ \(.*?\)\s*/, '')}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </div>
  );
}

/**
 * The volume page's "who keeps it busy": reports attached to unmounts that failed as busy, and a
 * search on demand for each pod's mount and the staging path.
 */
export function BlockersPanelBody({ agent, volume, snapshot }: { agent: string; volume: string; snapshot: Snapshot }) {
  const attached = snapshot.unmountBlockers.filter((b) => b.volume === volume);
  const actual = snapshot.actual.volumes.find((v) => v.uniqueVolumeName === volume);
  const targets: { podUid: string | null; label: string }[] = [
    ...(actual?.pods.map((p) => ({ podUid: p.podUid, label: `pod ${p.podNamespace === undefined ? p.podUid : `${p.podNamespace}/${p.podName}`}` })) ?? []),
    ...(actual !== undefined && actual.deviceMountPath !== '' ? [{ podUid: null, label: 'the staging path' }] : []),
  ];
  const [result, setResult] = useState<{ key: string; report: BlockersReport | null; error: string | null; running: boolean } | null>(null);
  const search = (podUid: string | null, label: string): void => {
    setResult({ key: label, report: null, error: null, running: true });
    fetchBlockers(agent, volume, podUid).then(
      (report) => { setResult({ key: label, report, error: null, running: false }); },
      (err: unknown) => { setResult({ key: label, report: null, error: err instanceof Error ? err.message : String(err), running: false }); },
    );
  };
  return (
    <>
      {attached.map((b) => (
        <BlockersReportView key={`${b.operationName}|${b.podUid ?? ''}`} report={b.report} title={`${b.operationName === 'unmount_device' ? 'UnmountDevice' : 'TearDown'} failed: the target is busy`} />
      ))}
      {targets.length === 0 ? (
        <EmptyState>Nothing of this volume is mounted on the node.</EmptyState>
      ) : (
        <div className="toolbar">
          {targets.map((t) => (
            <button key={t.label} type="button" className="button" disabled={result?.running === true} onClick={() => { search(t.podUid, t.label); }}>
              Find what holds {t.label}
            </button>
          ))}
        </div>
      )}
      {result === null ? null : result.running ? (
        <p role="status">Searching every process for {result.key}…</p>
      ) : result.error !== null ? (
        <p role="alert">The search failed: {result.error}</p>
      ) : result.report !== null ? (
        <BlockersReportView report={result.report} title={`What holds ${result.key} now`} />
      ) : null}
    </>
  );
}
