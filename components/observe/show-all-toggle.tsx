import { OBSERVE_ROW_CAP } from '../../lib/dashboard/observe-view.ts';

/**
 * "Showing the first 200 of 950" and the button that shows all (or the first 200 again).
 * Nothing when the list is not longer than the cap.
 */
export function ShowAllToggle({ total, showAll, onToggle, what, controls }: { total: number; showAll: boolean; onToggle: () => void; what: string; controls: string }) {
  if (total <= OBSERVE_ROW_CAP) return null;
  return (
    <p className="muted">
      {showAll ? `Showing all ${total} ${what}. ` : `Showing the first ${OBSERVE_ROW_CAP} of ${total} ${what}. `}
      <button type="button" className="button button--small" aria-expanded={showAll} aria-controls={controls} onClick={onToggle}>
        {showAll ? `Show the first ${OBSERVE_ROW_CAP} only` : `Show all ${total}`}
      </button>
    </p>
  );
}
