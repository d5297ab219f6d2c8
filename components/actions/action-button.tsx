'use client';

import { useId } from 'react';
import type { ActionAvailability } from '../../lib/dashboard/action-guards.ts';

/**
 * A button for an action. When not allowed it stays focusable but inert (`aria-disabled`), and
 * the reason is shown under it (over what follows, never moving it: `.action__reason` is
 * positioned) and read with it.
 */
export function ActionButton({ label, availability, onClick, small = false }: { label: string; availability: ActionAvailability; onClick: () => void; small?: boolean }) {
  const reasonId = useId();
  const allowed = availability.allowed;
  return (
    <span className="action">
      <button
        type="button"
        className={`button button--action${small ? ' button--small' : ''}`}
        aria-disabled={!allowed}
        aria-describedby={allowed ? undefined : reasonId}
        onClick={() => {
          if (allowed) onClick();
        }}
      >
        {label}
      </button>
      {!availability.allowed ? (
        <span id={reasonId} className="action__reason">
          {small ? <span className="visually-hidden">{`Not available: ${availability.reason}`}</span> : `Not available: ${availability.reason}`}
        </span>
      ) : null}
    </span>
  );
}
