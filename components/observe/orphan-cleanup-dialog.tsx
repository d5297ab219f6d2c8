'use client';

import { useMutation } from '@tanstack/react-query';
import type { OrphanPod } from '../../lib/api/observe.ts';
import { orphanCleanupMutationOptions, withCleanupNote } from '../../lib/dashboard/actions-client.ts';
import { ConfirmDialog } from '../dialogs/confirm-dialog.tsx';
import { CleanupError } from './cleanup-error.tsx';
import { CleanupResult } from './cleanup-result.tsx';

/** A Clean up waiting for confirmation. */
export interface PendingCleanup {
  readonly orphan: OrphanPod;
  /** Exactly what will happen, shown verbatim (describeOrphanCleanup). */
  readonly description: string;
}

/** The confirmation dialog of Clean up: the shared ConfirmDialog with the cleanup's result and refusal views. */
export function OrphanCleanupDialog({ agent, pending, onClose }: { agent: string; pending: PendingCleanup | null; onClose: () => void }) {
  const mutation = useMutation(orphanCleanupMutationOptions(agent));
  return (
    <ConfirmDialog
      content={
        pending === null ? null : { title: `Clean up orphaned pod directory of pod uid ${pending.orphan.podUid}`, description: pending.description, confirmLabel: 'Clean up', variables: { podUid: pending.orphan.podUid } }
      }
      mutation={mutation}
      renderResult={(response) => <CleanupResult response={response} />}
      renderError={(error) => <CleanupError error={error} />}
      onClose={onClose}
      withNote={withCleanupNote}
    />
  );
}
