'use client';

import { useEffect, useRef, type RefObject } from 'react';

/**
 * Keeps a `<dialog>` modal in step with `open`: shown with `showModal()` (focus trapped, Escape
 * closes it, the page behind is inert) when `open` turns true — after `onOpen`, where callers
 * reset the previous answer — and closed when it turns false. The dialog's own `close` event
 * (Escape, a `method="dialog"` form) is the caller's `onClose`.
 */
export function useModalDialog(open: boolean, onOpen: () => void): RefObject<HTMLDialogElement | null> {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (open && !dialog.open) {
      onOpen();
      dialog.showModal();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open, onOpen]);
  return ref;
}
