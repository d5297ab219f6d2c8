'use client';

import type { Snapshot } from '../../lib/api/index.ts';
import { RECONSTRUCTION_LEGEND, reconstructionSentence } from '../../lib/dashboard/blind-view.ts';
import { summarizeNode } from '../../lib/dashboard/node-summary.ts';
import { usePodNames } from '../hooks/use-pod-names.ts';
import { Panel } from '../shared/panel.tsx';
import { timeOfDay } from '../shared/time-text.tsx';
import { ReconstructionLine } from './reconstruction-line.tsx';
import { ReconstructionTable } from './reconstruction-table.tsx';

/** What each outcome of the table means (its icon, the sentence's word, the outcome name). */
function OutcomeLegend() {
  return (
    <dl className="legend" aria-label="Reconstruction outcomes">
      {RECONSTRUCTION_LEGEND.map((entry) => (
        <div key={entry.outcome} className="legend__item">
          <dt>
            <span className={`outcome outcome--${entry.outcome}`}>
              <span aria-hidden="true">{entry.icon} </span>
              {entry.label}
            </span>
          </dt>
          <dd>
            <code>{entry.outcome}</code>: {entry.meaning}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * The reconstruction section (anchor `#reconstruction`, the restart banner links here): one
 * plain sentence, the legend, the status line and the table of volume directories.
 */
export function ReconstructionPanel({ agent, snapshot }: { agent: string; snapshot: Snapshot }) {
  const podNames = usePodNames(snapshot);
  const summary = summarizeNode(snapshot);
  return (
    <Panel id="reconstruction" title="Reconstruction">
      <p className="plain-line" suppressHydrationWarning>
        {reconstructionSentence(summary.reconstruction, snapshot.agent.startedAt, timeOfDay)}
      </p>
      <OutcomeLegend />
      <ReconstructionLine summary={summary} />
      <ReconstructionTable node={agent} reconstruction={snapshot.reconstruction} podNames={podNames} />
    </Panel>
  );
}
