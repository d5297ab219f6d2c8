'use client';

import { useMutation } from '@tanstack/react-query';
import { memo, useId } from 'react';
import type { OrphanPod } from '../../lib/api/observe.ts';
import { orphanCleanupMutationOptions } from '../../lib/dashboard/actions-client.ts';
import { cleanupAvailabilityFor, orphanVerdictLabel, type ObserveActionAvailability } from '../../lib/dashboard/observe-view.ts';
import { ActionButton } from '../actions/action-button.tsx';
import { RelativeTime } from '../shared/time-text.tsx';
import { CleanupError } from './cleanup-error.tsx';
import { CleanupResult } from './cleanup-result.tsx';
import { MountList } from './mount-list.tsx';
import { OrphanVolumesTable } from './orphan-volumes-table.tsx';
import { StateBadge } from './state-badge.tsx';

export interface OrphanCardProps {
  readonly agent: string;
  readonly orphan: OrphanPod;
  readonly availability: ObserveActionAvailability;
  readonly onCleanup: (orphan: OrphanPod) => void;
}

/** One orphaned pod directory: what is in it, and Dry run (result inline) / Clean up (dialog). */
export const OrphanCard = memo(function OrphanCard({ agent, orphan, availability, onCleanup }: OrphanCardProps) {
  const titleId = useId();
  const dryRun = useMutation(orphanCleanupMutationOptions(agent));
  const cleanup = cleanupAvailabilityFor(orphan, availability);
  return (
    <article className="pipeline-card" aria-labelledby={titleId}>
      <div className="pipeline-card__header">
        <h3 id={titleId}>
          Pod <code>{orphan.podUid}</code>
        </h3>
        <StateBadge state={orphanVerdictLabel(orphan.verdict)} />
        <span className="muted">
          last modified <RelativeTime at={orphan.modifiedAt} />
        </span>
      </div>
      <dl className="facts-grid">
        <dt>Path</dt>
        <dd>
          <code>{orphan.path}</code>
        </dd>
        <dt>Verdict</dt>
        <dd>{orphan.explanation}</dd>
        <dt>Mounts</dt>
        <dd>
          <MountList mounts={orphan.mounts} none="none at or below the pod directory" />
        </dd>
        {orphan.leftovers.length > 0 ? (
          <>
            <dt>Other entries</dt>
            <dd>{orphan.leftovers.join(', ')}</dd>
          </>
        ) : null}
      </dl>
      <OrphanVolumesTable orphan={orphan} />
      <div className="toolbar">
        <ActionButton
          small
          label="Dry run"
          accessibleName={`Dry run cleanup of pod directory ${orphan.podUid}`}
          availability={availability}
          onClick={() => {
            if (!dryRun.isPending) dryRun.mutate({ podUid: orphan.podUid, dryRun: true });
          }}
        />
        <ActionButton
          small
          label="Clean up"
          accessibleName={`Clean up pod directory ${orphan.podUid}`}
          availability={cleanup}
          onClick={() => {
            onCleanup(orphan);
          }}
        />
        {!availability.allowed ? (
          // Read to screen readers through each button's description; shown once here.
          <span className="action__reason" aria-hidden="true">
            Not available: {availability.reason}
          </span>
        ) : !cleanup.allowed ? (
          <span className="action__reason" aria-hidden="true">
            Clean up not available: {cleanup.reason}
          </span>
        ) : null}
      </div>
      {dryRun.isPending ? (
        <p role="status">
          <span aria-hidden="true">↻ </span>Dry run: waiting for the agent…
        </p>
      ) : null}
      {dryRun.isSuccess ? <CleanupResult response={dryRun.data} /> : null}
      {dryRun.isError ? <CleanupError error={dryRun.error} /> : null}
    </article>
  );
});
