'use client';

import type { Operation } from '../../lib/api/index.ts';
import { describeRetry, retryAvailability, retryRequestFor } from '../../lib/dashboard/action-guards.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import { ActionButton } from './action-button.tsx';

export interface RetryButtonProps {
  readonly node: string;
  /** The operation whose backoff Retry now clears. */
  readonly op: Operation;
  readonly phase: ConnectionPhase;
  /** Opens the confirmation dialog with the action. */
  readonly onAction: (action: PendingAction) => void;
}

/** The small "Retry now" button of an operation: asks for confirmation, then clears its backoff. */
export function RetryButton({ node, op, phase, onAction }: RetryButtonProps) {
  return (
    <ActionButton
      small
      label="Retry now"
      availability={retryAvailability(op, phase)}
      onClick={() => {
        onAction({ title: 'Retry now', description: describeRetry(node, op), confirmLabel: 'Retry now', request: { kind: 'retry', body: retryRequestFor(op) } });
      }}
    />
  );
}
