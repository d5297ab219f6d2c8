'use client';

import { describeUnmount, unmountAvailability } from '../../lib/dashboard/action-guards.ts';
import { rowPodName, type VolumeRow } from '../../lib/dashboard/pipeline.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import { ActionButton } from './action-button.tsx';

export interface UnmountButtonProps {
  readonly node: string;
  /** A row of a pod that is no longer desired (the only rows with Unmount). */
  readonly row: VolumeRow;
  readonly phase: ConnectionPhase;
  /** The agent's states are synced (unmounting before that is refused). */
  readonly synced: boolean;
  /** The agent runs in observe mode: Unmount is not available. */
  readonly observing: boolean;
  /** The pod's `namespace/name` when the row has only its UID (a pod that is gone, named by its events). */
  readonly podName?: string | null;
  /** Opens the confirmation dialog with the action. */
  readonly onAction: (action: PendingAction) => void;
}

/**
 * The small "Unmount" button of a pod volume: asks for confirmation, then unmounts it. Its
 * accessible name says which volume of which pod.
 */
export function UnmountButton({ node, row, podName = null, phase, synced, observing, onAction }: UnmountButtonProps) {
  const pod = podName ?? rowPodName(row);
  return (
    <ActionButton
      small
      label="Unmount"
      accessibleName={`Unmount volume ${row.volumeName} of pod ${pod}`}
      availability={unmountAvailability(row, { statesSynced: synced, observing }, phase)}
      onClick={() => {
        onAction({ title: `Unmount volume ${row.volumeName} of pod ${pod}`, description: describeUnmount(node, row, podName), confirmLabel: 'Unmount', request: { kind: 'unmount', body: { podUid: row.podUid, volume: row.uniqueVolumeName } } });
      }}
    />
  );
}
