import type { NodeSummary } from '../../lib/dashboard/node-summary.ts';
import { FOUND_ON_DISK } from '../../lib/dashboard/volume-state-wording.ts';

/** One count of the list: label, value and the tone of a value worth a look. */
type CountItem = readonly [label: string, value: number, tone?: string];

/**
 * The counts of a node as the list shows them. Observe mode shows the kubelet's outstanding work
 * (the plan's one number, `outstandingWork`) and its failing entries instead of the agent's own
 * pending and backoff counts (an observing agent runs no operations), and calls its uncertain
 * states what they are there: found on disk, not confirmed (no warning tone: the agent rebuilds
 * every volume from the kubelet's root dir).
 */
export function nodeCountItems(summary: NodeSummary): CountItem[] {
  const observe = summary.mode === 'observe' ? summary.observe : null;
  const head: CountItem[] = [
    ['pods', summary.pods],
    ['desired volumes', summary.desiredVolumes],
    ['mounted', summary.mounted],
  ];
  const errors: CountItem[] = [
    ['pod errors', summary.podErrors, summary.podErrors > 0 ? 'bad' : undefined],
    ['source errors', summary.sourceErrors, summary.sourceErrors > 0 ? 'bad' : undefined],
  ];
  if (summary.mode === 'observe') {
    const outstanding = observe?.outstanding;
    const failing = observe?.failing ?? 0;
    return [
      ...head,
      [FOUND_ON_DISK, summary.uncertain],
      ...(outstanding === undefined ? [] : [['outstanding (kubelet)', outstanding, outstanding > 0 ? 'note' : undefined] as const]),
      ['failing in the kubelet', failing, failing > 0 ? 'bad' : undefined],
      ...errors,
    ];
  }
  return [
    ...head,
    ['uncertain', summary.uncertain, summary.uncertain > 0 ? 'warn' : undefined],
    ['pending', summary.pending, summary.pending > 0 ? 'note' : undefined],
    ['in backoff', summary.inBackoff, summary.inBackoff > 0 ? 'bad' : undefined],
    ...errors,
  ];
}

/** The overview numbers of a node as a definition list. */
export function NodeCounts({ summary }: { summary: NodeSummary }) {
  return (
    <dl className="counts">
      {nodeCountItems(summary).map(([label, value, tone]) => (
        <div key={label} className={`counts__item${tone !== undefined ? ` counts__item--${tone}` : ''}`}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
