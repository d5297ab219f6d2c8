/**
 * Where keyboard focus goes when a modal dialog closes. The native `<dialog>` opened with
 * `showModal()` keeps focus inside it (the page behind is inert) and browsers move focus back to
 * the element focused before it opened; but an action can replace or remove its own trigger:
 * Retry now re-renders the operation's row while the retry runs (the operation leaves the table
 * for a moment and comes back, so React mounts a new button), Unmount of a pod's last volume
 * removes it. The element focused at open time is then detached, and focus would fall to the
 * document's start. So the dialog remembers the trigger, its stable focus key (the
 * {@link FOCUS_KEY_ATTRIBUTE} the action buttons carry: the same for the re-rendered button) and
 * the containers around it, and returns focus to the first of these still in the document:
 * 1. the trigger itself;
 * 2. the element with the trigger's focus key, looked up inside the nearest container still in
 *    the document first (a target's buttons can appear on a page twice: in its card and in a
 *    table), then in the whole document;
 * 3. the nearest container still in the document (the volume's card, the section, main).
 * Pure (DOM-free): the lookup is handed in.
 */

/** The attribute that names an action button stably across re-renders (its accessible name). */
export const FOCUS_KEY_ATTRIBUTE = 'data-focus-key';

/** What focus can be returned to (an element). */
export interface FocusTarget {
  readonly isConnected: boolean;
  focus(options?: { preventScroll?: boolean }): void;
}

/** What the dialog remembered when it opened. */
export interface FocusOpener<T extends FocusTarget> {
  /** The element focused at open time; null when nothing (the body) was. */
  readonly trigger: T | null;
  /** The trigger's {@link FOCUS_KEY_ATTRIBUTE}; null when it has none. */
  readonly key: string | null;
  /** The containers around the trigger, innermost first (card, section, main). */
  readonly containers: readonly T[];
}

/**
 * The element focus returns to (see the module comment), or null when none is in the document
 * (focus stays where the browser put it). `findByKey(key, within)` finds the element with the
 * focus key inside `within` (null: the whole document).
 */
export function focusReturnTarget<T extends FocusTarget>(opener: FocusOpener<T>, findByKey: (key: string, within: T | null) => T | null): T | null {
  if (opener.trigger?.isConnected === true) return opener.trigger;
  const container = opener.containers.find((c) => c.isConnected) ?? null;
  if (opener.key !== null) {
    const rerendered = (container === null ? null : findByKey(opener.key, container)) ?? findByKey(opener.key, null);
    if (rerendered?.isConnected === true) return rerendered;
  }
  return container;
}
