import type { NodeCondition } from '../../lib/api/index.ts';
import { nodeConditionsView } from '../../lib/dashboard/node-conditions-view.ts';
import { RelativeTime } from '../shared/time-text.tsx';

/**
 * The Node object's conditions (unhealthy first, with reason and since when), from the agent's
 * node informer. Nothing without an API server (the manifest source has no Node): nothing is
 * invented.
 */
export function NodeConditions({ conditions }: { conditions: readonly NodeCondition[] | undefined }) {
  const views = nodeConditionsView(conditions);
  if (views === null) return null;
  return (
    <p className="facts node-conditions">
      <span className="muted">Node conditions:</span>
      {views.length === 0 ? <span>none reported</span> : null}
      {views.map((c) => (
        <span key={c.type} className={c.healthy ? 'text-good' : 'text-bad'} title={c.message ?? undefined}>
          <span aria-hidden="true">{c.healthy ? '✓ ' : '! '}</span>
          {c.text}
          {c.healthy || c.since === null ? null : (
            <span className="muted small">
              {' '}
              since <RelativeTime at={c.since} />
            </span>
          )}
        </span>
      ))}
    </p>
  );
}
