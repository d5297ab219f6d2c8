'use client';

import { useMemo } from 'react';
import type { Snapshot } from '../../lib/api/index.ts';
import { useNow } from '../../lib/dashboard/use-agent.ts';
import { buildTimeline, type TimelineSubject } from '../../lib/dashboard/volume-timeline.ts';
import { Panel } from './panel.tsx';
import { TimelineChart } from './timeline-chart.tsx';

/** The "Timeline" section of the pod and volume pages: the subject's operations, backoff and events over time. */
export function TimelinePanel({ snapshot, subject, title, fileName }: { snapshot: Snapshot; subject: TimelineSubject; title: string; fileName: string }) {
  // Five-second steps: a running operation's bar grows, without redrawing the chart every second.
  const now = Math.floor(useNow(5_000) / 5_000) * 5_000;
  const timeline = useMemo(() => buildTimeline(snapshot, subject, now), [snapshot, subject, now]);
  return (
    <Panel id="timeline" title="Timeline">
      <TimelineChart timeline={timeline} title={title} fileName={fileName} />
    </Panel>
  );
}
