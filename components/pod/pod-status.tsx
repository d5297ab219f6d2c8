'use client';

import { containerLine, containerSinceTitle, type PodStatusSource } from '../../lib/dashboard/pod-status-view.ts';
import { LiveText } from '../shared/time-text.tsx';

/**
 * The pod's phase and its containers' states ("app: ContainerCreating since 1 min", live), as the
 * API source has them; nothing at all when the source has no status (pod-status-view.ts).
 */
export function PodStatusText({ status }: { status: PodStatusSource | undefined }) {
  const containers = status?.containers ?? [];
  if (status?.phase === undefined && containers.length === 0) return null;
  return (
    <span data-testid="pod-status">
      {status?.phase === undefined ? null : <span>phase {status.phase}</span>}
      {containers.map((c) => (
        <span key={`${c.kind}/${c.name}`} title={containerSinceTitle(c)}>
          {' · '}
          <LiveText text={(now) => containerLine(c, now)} />
        </span>
      ))}
    </span>
  );
}
