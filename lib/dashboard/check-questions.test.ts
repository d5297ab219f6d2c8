import { describe, expect, it } from 'vitest';
import { checkLine, checkQuestion } from './check-questions.ts';

describe('checks as questions', () => {
  it.each([
    { check: { name: 'pod-known-to-api', ok: true, detail: 'no' }, line: 'Pod still known to the API? no' },
    { check: { name: 'pod-known-to-api', ok: false, detail: 'yes' }, line: 'Pod still known to the API? yes' },
    { check: { name: 'desired-state-incomplete', ok: false, detail: 'the API source has not listed every pod yet' }, line: 'Pod list incomplete? yes — the API source has not listed every pod yet' },
    { check: { name: 'mount-table-read', ok: true, detail: '12 mounts listed' }, line: 'Mount table readable? yes — 12 mounts listed' },
    { check: { name: 'pod-not-desired', ok: false, detail: 'pod default/x is in the desired state' }, line: 'Pod no longer wants the volume? no — pod default/x is in the desired state' },
    { check: { name: 'unmount /var/lib/kubelet/pods/u/volumes/x', ok: true, detail: 'tmpfs from tmpfs unmounted' }, line: 'Unmounted /var/lib/kubelet/pods/u/volumes/x? yes — tmpfs from tmpfs unmounted' },
    { check: { name: 'pod-known-to-api', ok: false, detail: 'the check failed: connection refused' }, line: 'Pod still known to the API? unknown — the check failed: connection refused' },
    { check: { name: 'something-new', ok: false, detail: 'why' }, line: 'something-new? no — why' },
  ])('$line', ({ check, line }) => {
    expect(checkLine(check)).toBe(line);
  });

  it('answers with the passing answer exactly when the check passed', () => {
    expect(checkQuestion({ name: 'no-mounts-left', ok: true, detail: 'none' })).toEqual({ question: 'Anything left mounted?', answer: 'no', detail: null, ok: true });
  });
});
