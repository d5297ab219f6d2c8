'use client';

import type { Operation } from '../../lib/api/index.ts';
import { describeRetry, retryAvailability, retryRequestFor } from '../../lib/dashboard/action-guards.ts';
import type { ConnectionPhase } from '../../lib/dashboard/queries.ts';
import { retryTargetText } from '../../lib/dashboard/retry-follow-up.ts';
import type { PendingAction } from '../dialogs/action-dialog.tsx';
import { ActionButton } from './action-button.tsx';

export interface RetryButtonProps {
  readonly node: string;
  /** The operation whose backoff Retry now clears. */
  readonly op: Operation;
  /** The pod's `namespace/name`, when known: the button's accessible name and the dialog say it. */
  readonly podName?: string | null;
  /** The pod's name for the volume, when known. */
  readonly volumeName?: string | null;
  readonly phase: ConnectionPhase;
  /** Opens the confirmation dialog with the action. */
  readonly onAction: (action: PendingAction) => void;
}

/** The pending action of Retry now: its dialog names the target and follows the operation after it. */
export function retryAction(node: string, op: Operation, names: { podName?: string | null; volumeName?: string | null }): PendingAction {
  return {
    title: `Retry now: ${retryTargetText(op, names)}`,
    description: describeRetry(node, op, names),
    confirmLabel: 'Retry now',
    request: { kind: 'retry', body: retryRequestFor(op) },
    operation: op,
  };
}

/**
 * The small "Retry now" button of an operation: asks for confirmation, then clears its backoff.
 * Its accessible name says what it retries ("Retry now: mount volume pgdata for pod default/db").
 */
export function RetryButton({ node, op, podName, volumeName, phase, onAction }: RetryButtonProps) {
  const names = { podName, volumeName };
  return (
    <ActionButton
      small
      label="Retry now"
      accessibleName={`Retry now: ${retryTargetText(op, names)}`}
      availability={retryAvailability(op, phase)}
      onClick={() => {
        onAction(retryAction(node, op, names));
      }}
    />
  );
}
