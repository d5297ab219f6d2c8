'use client';

import { useEffect, useRef, type RefObject } from 'react';
import { focusReturnTarget } from './focus-return.ts';

/** The element focused when the dialog opened, and the section (or main) around it. */
interface Opener {
  readonly trigger: HTMLElement | null;
  readonly fallback: HTMLElement | null;
}

function currentOpener(): Opener {
  const active = document.activeElement;
  const trigger = active instanceof HTMLElement && active !== document.body ? active : null;
  const fallback = trigger?.closest<HTMLElement>('section[id], main') ?? document.querySelector<HTMLElement>('main');
  return { trigger, fallback };
}

/** Focuses what {@link focusReturnTarget} picks; a section gets `tabindex="-1"` to take focus. */
function returnFocus(opener: Opener): void {
  const target = focusReturnTarget(opener.trigger, opener.fallback);
  if (target === null) return;
  if (target !== opener.trigger && !target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
  target.focus();
}

/**
 * Keeps a `<dialog>` modal in step with `open`: shown with `showModal()` (focus kept inside,
 * Escape closes it, the page behind is inert) when `open` turns true — after `onOpen`, where
 * callers reset the previous answer — and closed when it turns false. The dialog's own `close`
 * event (Escape, a `method="dialog"` form) is the caller's `onClose`. On close, keyboard focus
 * returns to the element that opened it, or to its section when the action removed it
 * (focus-return.ts).
 */
export function useModalDialog(open: boolean, onOpen: () => void): RefObject<HTMLDialogElement | null> {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Opener | null>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (open && !dialog.open) {
      opener.current = currentOpener();
      onOpen();
      dialog.showModal();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open, onOpen]);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    const onClose = (): void => {
      const from = opener.current;
      opener.current = null;
      if (from !== null) returnFocus(from);
    };
    dialog.addEventListener('close', onClose);
    return () => {
      dialog.removeEventListener('close', onClose);
    };
  }, []);
  return ref;
}
