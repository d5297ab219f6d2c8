'use client';

import { useEffect, useRef, type RefObject } from 'react';
import { FOCUS_KEY_ATTRIBUTE, focusReturnTarget, type FocusOpener } from './focus-return.ts';

/** The containers focus may fall back to, innermost first: a card, a section, main. */
const CONTAINERS = ['article', 'section[id]', 'main'] as const;

function currentOpener(): FocusOpener<HTMLElement> {
  const active = document.activeElement;
  const trigger = active instanceof HTMLElement && active !== document.body ? active : null;
  const containers: HTMLElement[] = [];
  for (const selector of CONTAINERS) {
    const container = trigger?.closest<HTMLElement>(selector) ?? null;
    if (container !== null && !containers.includes(container)) containers.push(container);
  }
  const main = document.querySelector<HTMLElement>('main');
  if (main !== null && !containers.includes(main)) containers.push(main);
  return { trigger, key: trigger?.getAttribute(FOCUS_KEY_ATTRIBUTE) ?? null, containers };
}

/** The element carrying the focus key inside `within` (null: the document). */
function findByKey(key: string, within: HTMLElement | null): HTMLElement | null {
  return (within ?? document).querySelector<HTMLElement>(`[${FOCUS_KEY_ATTRIBUTE}="${CSS.escape(key)}"]`);
}

/** Focuses what {@link focusReturnTarget} picks; a container gets `tabindex="-1"` to take focus. */
function returnFocus(opener: FocusOpener<HTMLElement>): void {
  const target = focusReturnTarget(opener, findByKey);
  if (target === null) return;
  if (opener.containers.includes(target) && !target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
  target.focus();
}

/**
 * Keeps a `<dialog>` modal in step with `open`: shown with `showModal()` (focus kept inside,
 * Escape closes it, the page behind is inert) when `open` turns true — after `onOpen`, where
 * callers reset the previous answer — and closed when it turns false. The dialog's own `close`
 * event (Escape, a `method="dialog"` form) is the caller's `onClose`. On close, keyboard focus
 * returns to the element that opened it, to its re-rendered namesake when the action replaced
 * it, or to its card or section when the action removed it (focus-return.ts).
 */
export function useModalDialog(open: boolean, onOpen: () => void): RefObject<HTMLDialogElement | null> {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<FocusOpener<HTMLElement> | null>(null);
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
