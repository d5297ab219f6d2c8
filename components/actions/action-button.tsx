'use client';

import { useId } from 'react';
import type { ActionAvailability } from '../../lib/dashboard/action-guards.ts';
import { FOCUS_KEY_ATTRIBUTE } from '../hooks/focus-return.ts';
import { withPermission } from '../../lib/dashboard/auth/permissions-client.ts';
import { useAgentPermissions } from '../page/agent-permissions.tsx';

/**
 * A button for an action. When not allowed it stays focusable but inert (`aria-disabled`), and
 * the reason is shown under it (over what follows, never moving it: `.action__reason` is
 * positioned) and read with it. Every action needs `update` on the agent: a user without it
 * sees the button refused with the permission's reason. `accessibleName` names the target too
 * ("Unmount volume config of pod default/web-0"); it starts with the visible `label`, so speech
 * input finds the button. It is also the button's focus key (focus-return.ts): a dialog the
 * button opened returns focus to the button that carries the same key when a re-render replaced
 * this one.
 */
export function ActionButton({
  label,
  accessibleName,
  availability: ownAvailability,
  onClick,
  small = false,
}: {
  label: string;
  accessibleName?: string;
  availability: ActionAvailability;
  onClick: () => void;
  small?: boolean;
}) {
  const reasonId = useId();
  const availability = withPermission(ownAvailability, useAgentPermissions());
  const allowed = availability.allowed;
  return (
    <span className="action">
      <button
        type="button"
        className={`button button--action${small ? ' button--small' : ''}`}
        aria-label={accessibleName}
        {...{ [FOCUS_KEY_ATTRIBUTE]: accessibleName ?? label }}
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
