/**
 * Where keyboard focus goes when a modal dialog closes. The native `<dialog>` opened with
 * `showModal()` keeps focus inside it (the page behind is inert) and browsers move focus back to
 * the element focused before it opened; but an action can remove its own trigger (Retry now on an
 * operation that then succeeds and leaves the table, Unmount of a pod's last volume), and focus
 * would then fall to the document's start. So the dialog remembers the trigger and the section
 * around it, and returns focus to the first of them still in the document. Pure (DOM-free).
 */

/** What focus can be returned to (an element). */
export interface FocusTarget {
  readonly isConnected: boolean;
  focus(options?: { preventScroll?: boolean }): void;
}

/**
 * The trigger when it is still in the document, else the fallback (the section it was in) when
 * that is, else null (focus stays where the browser put it).
 */
export function focusReturnTarget<T extends FocusTarget>(trigger: T | null, fallback: T | null): T | null {
  if (trigger?.isConnected === true) return trigger;
  if (fallback?.isConnected === true) return fallback;
  return null;
}
