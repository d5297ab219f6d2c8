'use client';

/**
 * The CSI driver panel of the node page: for each driver its calls since the agent started — per
 * RPC the calls, errors by gRPC code, latency quantiles and histogram (the buckets of
 * `csi_operations_seconds`) —, the latest calls with their (secret-stripped) requests, and the
 * history of its Probe / GetPluginInfo answers.
 */
import { memo } from 'react';
import type { CsiDriverCalls } from '../../lib/api/index.ts';
import { BUCKET_LABELS, bucketQuantile, errorCount, formatSeconds } from '../../lib/dashboard/csi-panel-view.ts';
import { DataTable } from '../shared/data-table.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { TimeOfDay } from '../shared/time-text.tsx';

/** A bar per latency bucket, as wide as its share of the calls. */
function Histogram({ buckets, method }: { buckets: readonly number[]; method: string }) {
  const max = Math.max(1, ...buckets);
  const w = 8;
  return (
    <svg viewBox={`0 0 ${buckets.length * (w + 2)} 24`} width={buckets.length * (w + 2)} height="24" role="img" aria-label={`latency histogram of ${method}: ${buckets.map((c, i) => `${BUCKET_LABELS[i] ?? ''} ${c}`).join(', ')}`}>
      {buckets.map((count, i) => (
        <rect key={BUCKET_LABELS[i]} x={i * (w + 2)} y={24 - (count / max) * 22} width={w} height={Math.max(count > 0 ? 1 : 0, (count / max) * 22)} fill="currentColor">
          <title>{`${BUCKET_LABELS[i] ?? ''}: ${count}`}</title>
        </rect>
      ))}
    </svg>
  );
}

/** Probe history as a strip: one mark per answer, oldest left. */
function ProbeStrip({ driver }: { driver: CsiDriverCalls }) {
  if (driver.probes.length === 0) return <span className="muted">no probe yet</span>;
  const bad = driver.probes.filter((p) => p.code !== 'OK' || p.ready === false).length;
  return (
    <span>
      <svg viewBox={`0 0 ${driver.probes.length * 6} 12`} width={driver.probes.length * 6} height="12" role="img" aria-label={`${driver.probes.length} probes, ${bad} failed or not ready`}>
        {driver.probes.map((p, i) => (
          <rect key={`${p.at}-${i}`} x={i * 6} y="0" width="4" height="12" className={p.code !== 'OK' || p.ready === false ? 'text-bad' : 'text-ok'} fill="currentColor">
            <title>{`${new Date(p.at).toISOString()} ${p.method} ${p.code}${p.ready === null ? '' : ` ready=${String(p.ready)}`}${p.vendorVersion === null ? '' : ` ${p.vendorVersion}`} ${p.durationMs} ms${p.error === null ? '' : `: ${p.error}`}`}</title>
          </rect>
        ))}
      </svg>{' '}
      {driver.probes.length} answers, {bad === 0 ? 'all OK' : <span className="text-bad">{bad} failed or not ready</span>}
    </span>
  );
}

function DriverCalls({ driver }: { driver: CsiDriverCalls }) {
  return (
    <div className="csi-driver">
      <h3>
        <code>{driver.driver}</code>
      </h3>
      <p className="small">
        Probe / GetPluginInfo history: <ProbeStrip driver={driver} />
      </p>
      <DataTable columns={['RPC', 'Calls', 'Errors', 'p50', 'p99', 'Max', 'Latency histogram (0.1 s … 600 s)']} caption={`CSI calls of ${driver.driver} since the agent started`}>
        {driver.methods.map((m) => {
          const errors = errorCount(m);
          return (
            <tr key={m.method}>
              <td>
                <code>{m.method}</code>
              </td>
              <td>{m.calls}</td>
              <td className={errors > 0 ? 'text-bad' : undefined}>
                {errors === 0
                  ? '0'
                  : Object.entries(m.codes)
                      .filter(([code]) => code !== 'OK')
                      .map(([code, count]) => `${count} ${code}`)
                      .join(', ')}
              </td>
              <td>{formatSeconds(bucketQuantile(m.buckets, 0.5))}</td>
              <td>{formatSeconds(bucketQuantile(m.buckets, 0.99))}</td>
              <td>{formatSeconds(m.maxMs / 1000)}</td>
              <td>
                <Histogram buckets={m.buckets} method={m.method} />
              </td>
            </tr>
          );
        })}
      </DataTable>
      <details>
        <summary>Recent calls ({driver.recentCalls.length}, secrets stripped)</summary>
        {driver.recentCalls.length === 0 ? (
          <EmptyState>No call yet.</EmptyState>
        ) : (
          <DataTable columns={['Time', 'RPC', 'Code', 'Duration', 'Volume', 'Request', 'Error']} caption={`Recent CSI calls of ${driver.driver}, newest first`}>
            {[...driver.recentCalls].reverse().map((c, i) => (
              <tr key={`${c.at}-${c.method}-${i}`}>
                <td>
                  <TimeOfDay at={c.at} />
                </td>
                <td>
                  <code>{c.method}</code>
                </td>
                <td className={c.code === 'OK' ? undefined : 'text-bad'}>{c.code}</td>
                <td>{c.durationMs} ms</td>
                <td>{c.volumeId ?? '—'}</td>
                <td>
                  <code className="break small">{c.request}</code>
                </td>
                <td className="cell-error">{c.error === null ? '—' : <ErrorCauseText message={c.error} />}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </details>
    </div>
  );
}

/** Every driver's calls; `csiPanel` absent (an older agent) or empty says so. */
export const CsiPanel = memo(function CsiPanel({ panel }: { panel: readonly CsiDriverCalls[] | undefined }) {
  if (panel === undefined) return <EmptyState>This agent does not report its CSI calls (it predates the driver panel).</EmptyState>;
  if (panel.length === 0) return <EmptyState>No CSI call made yet.</EmptyState>;
  return (
    <>
      {panel.map((d) => (
        <DriverCalls key={d.driver} driver={d} />
      ))}
    </>
  );
});
