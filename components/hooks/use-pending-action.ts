import { useCallback, useState } from 'react';
import type { PendingAction } from '../dialogs/action-dialog.tsx';

/** The action a page's confirmation dialog shows, with stable callbacks to open and close it. */
export interface PendingActionState {
  /** The action waiting for confirmation; null while the dialog is closed. */
  readonly pending: PendingAction | null;
  /** Opens the dialog with `action` (the `onAction` of buttons and tables). */
  readonly open: (action: PendingAction) => void;
  /** Closes it (the dialog's `onClose`). */
  readonly close: () => void;
}

/** The state of a page's one ActionDialog. */
export function usePendingAction(): PendingActionState {
  const [pending, setPending] = useState<PendingAction | null>(null);
  const open = useCallback((action: PendingAction) => {
    setPending(action);
  }, []);
  const close = useCallback(() => {
    setPending(null);
  }, []);
  return { pending, open, close };
}
