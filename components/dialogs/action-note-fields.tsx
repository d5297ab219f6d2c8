'use client';

import { useId } from 'react';
import { MAX_ACTION_REASON_LENGTH, MAX_INCIDENT_ID_LENGTH, type ActionNote } from '../../lib/api/actions.ts';

/**
 * The two optional fields of every confirmation dialog: the incident ID and the reason the
 * operator acts for. They go into the action's request body and the agent's audit entry. The
 * inputs carry the contract's length bounds, so the browser stops at them before the agent's 400.
 */
export function ActionNoteFields({ note, onChange, disabled }: { note: ActionNote; onChange: (note: ActionNote) => void; disabled: boolean }) {
  const incidentId = useId();
  const reasonId = useId();
  return (
    <fieldset className="dialog__note" disabled={disabled}>
      <legend>For the audit log (optional)</legend>
      <label htmlFor={incidentId}>Incident ID</label>
      <input
        id={incidentId}
        name="incidentId"
        type="text"
        autoComplete="off"
        maxLength={MAX_INCIDENT_ID_LENGTH}
        value={note.incidentId ?? ''}
        onChange={(e) => {
          onChange({ ...note, incidentId: e.target.value });
        }}
      />
      <label htmlFor={reasonId}>Reason</label>
      <textarea
        id={reasonId}
        name="reason"
        rows={2}
        maxLength={MAX_ACTION_REASON_LENGTH}
        value={note.reason ?? ''}
        onChange={(e) => {
          onChange({ ...note, reason: e.target.value });
        }}
      />
    </fieldset>
  );
}
