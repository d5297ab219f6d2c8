import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { MAX_ACTION_REASON_LENGTH, MAX_INCIDENT_ID_LENGTH } from '../../lib/api/actions.ts';
import { withActionNote, withCleanupNote } from '../../lib/dashboard/actions-client.ts';
import { ActionNoteFields } from './action-note-fields.tsx';
import { filledNote } from './confirm-dialog.tsx';

describe('the confirmation dialog note', () => {
  it('renders labelled incident ID and reason fields bounded as the contract is', () => {
    const html = renderToStaticMarkup(createElement(ActionNoteFields, { note: { incidentId: 'INC-1' }, onChange: () => undefined, disabled: false }));

    expect(html).toContain('<legend>For the audit log (optional)</legend>');
    expect(html).toMatch(new RegExp(`<input id="[^"]+" type="text" autoComplete="off" maxLength="${MAX_INCIDENT_ID_LENGTH}" name="incidentId" value="INC-1"/>`));
    expect(html).toMatch(new RegExp(`<textarea id="[^"]+" name="reason" rows="2" maxLength="${MAX_ACTION_REASON_LENGTH}"></textarea>`));
    expect(html.match(/<label for="[^"]+">(Incident ID|Reason)<\/label>/g)).toHaveLength(2);
  });

  it('sends only filled fields, trimmed, in every action body', () => {
    const note = filledNote({ incidentId: '  INC-7 ', reason: '   ' });

    expect(note).toEqual({ incidentId: 'INC-7' });
    expect(withActionNote({ kind: 'resync' }, note)).toEqual({ kind: 'resync', note: { incidentId: 'INC-7' } });
    expect(withActionNote({ kind: 'unmount', body: { podUid: 'p', volume: 'v' } }, note)).toEqual({ kind: 'unmount', body: { podUid: 'p', volume: 'v', incidentId: 'INC-7' } });
    expect(withActionNote({ kind: 'retry', body: { volume: 'v' } }, {})).toEqual({ kind: 'retry', body: { volume: 'v' } });
    expect(withCleanupNote({ podUid: 'p' }, { reason: 'disk full' })).toEqual({ podUid: 'p', reason: 'disk full' });
  });
});
