import type { NodeSummary } from '../../lib/dashboard/node-summary.ts';
import { RelativeTime } from '../shared/time-text.tsx';

/** Reconstruction status and outcome counts, one line. */
export function ReconstructionLine({ summary }: { summary: NodeSummary }) {
  const r = summary.reconstruction;
  const o = r.outcomes;
  return (
    <p className="facts">
      <span>
        reconstruction <strong>{r.state}</strong>
        {r.finishedAt !== null ? (
          <>
            {' '}
            <RelativeTime at={r.finishedAt} />
          </>
        ) : null}
      </span>
      <span>
        {o.reconstructed} reconstructed · {o['confirmed-mounted']} confirmed mounted · {o['cleaned-up']} cleaned up ·{' '}
        <span className={o.failed > 0 ? 'text-bad' : undefined}>{o.failed} failed</span>
      </span>
    </p>
  );
}
