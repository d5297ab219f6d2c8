import type { NodeSummary } from '../../lib/dashboard/node-summary.ts';

/** The overview numbers of a node as a definition list. */
export function NodeCounts({ summary }: { summary: NodeSummary }) {
  const items: [string, number, string?][] = [
    ['pods', summary.pods],
    ['desired volumes', summary.desiredVolumes],
    ['mounted', summary.mounted],
    ['uncertain', summary.uncertain, summary.uncertain > 0 ? 'warn' : undefined],
    ['pending', summary.pending, summary.pending > 0 ? 'note' : undefined],
    ['in backoff', summary.inBackoff, summary.inBackoff > 0 ? 'bad' : undefined],
    ['pod errors', summary.podErrors, summary.podErrors > 0 ? 'bad' : undefined],
    ['source errors', summary.sourceErrors, summary.sourceErrors > 0 ? 'bad' : undefined],
  ];
  return (
    <dl className="counts">
      {items.map(([label, value, tone]) => (
        <div key={label} className={`counts__item${tone !== undefined ? ` counts__item--${tone}` : ''}`}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
