import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../api/index.ts';
import { observedSnapshot } from '../api/testing/observe-fixtures.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { createVolumeRowsSelector, deriveVolumeRows } from './pipeline.ts';
import { rowStageText } from './markdown-summary.ts';
import { FOUND_ON_DISK, uncertainCauseOf, uncertainHeadline, volumeStateText } from './volume-state-wording.ts';

const WEB_UID = '5c0a4c2e-0d3b-4f0e-9a51-2f6f1f3c7e10';

/** The example node with web-0's config mount uncertain, optionally as reconstruction left it (rebuilt from disk, not confirmed). */
function webConfigUncertain(reconstructed: boolean): Snapshot {
  const s = exampleSnapshot();
  return {
    ...s,
    actual: { volumes: s.actual.volumes.map((v) => ({ ...v, pods: v.pods.map((m) => (m.podUid === WEB_UID && m.outerVolumeName === 'config' ? { ...m, mountState: 'uncertain' as const } : m)) })) },
    reconstruction: reconstructed
      ? { ...s.reconstruction, volumes: [...s.reconstruction.volumes, { podUid: WEB_UID, volumeName: 'config', pluginName: 'kubernetes.io/configmap', outcome: 'reconstructed', error: null, at: s.reconstruction.finishedAt ?? 0 }] }
      : s.reconstruction,
  };
}

const webConfig = (s: Snapshot, rows = deriveVolumeRows(s)) => rows.find((r) => r.podUid === WEB_UID && r.volumeName === 'config');

describe('volume state wording', () => {
  it('one text per state; an uncertain volume only rebuilt from disk reads as the plan does', () => {
    expect(volumeStateText('uncertain', 'found-on-disk')).toBe(FOUND_ON_DISK);
    expect(FOUND_ON_DISK).toBe('found on disk, not confirmed');
    expect(volumeStateText('uncertain', 'outcome-unknown')).toBe('uncertain');
    expect(volumeStateText('backoff', 'found-on-disk')).toBe('backoff');
    expect(uncertainCauseOf('ready', true, true)).toBeNull();
    expect(uncertainCauseOf('uncertain', false, false)).toBe('outcome-unknown');
    expect(uncertainHeadline('outcome-unknown', false)).toBe('Uncertain here: neither mounted nor failed; the reconciler will settle it.');
    expect(uncertainHeadline('found-on-disk', true)).toMatch(/^Found on disk, not confirmed: .*the kubelet settles it\.$/);
  });

  it('observe mode: every uncertain row was rebuilt from the kubelet’s root dir', () => {
    const rows = deriveVolumeRows(observedSnapshot()).filter((r) => r.state === 'uncertain');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.uncertainCause)).toEqual(rows.map(() => 'found-on-disk'));
    const blockedUncertain = rows.filter((r) => r.blocking?.status === 'uncertain');
    expect(blockedUncertain.length).toBeGreaterThan(0);
    expect(blockedUncertain.map((r) => rowStageText(r).split(':')[0])).toEqual(blockedUncertain.map(() => FOUND_ON_DISK));
  });

  it('managed mode: found on disk while reconstruction has not confirmed it, uncertain for an unknown outcome', () => {
    const rebuilt = webConfig(webConfigUncertain(true));
    const timedOut = webConfig(webConfigUncertain(false));
    expect(rebuilt).toMatchObject({ state: 'uncertain', uncertainCause: 'found-on-disk', reconstructed: true });
    expect(rebuilt?.stages.find((s) => s.id === 'mounted')?.detail).toContain(`${FOUND_ON_DISK} (rebuilt from the pod’s directory`);
    expect(timedOut).toMatchObject({ state: 'uncertain', uncertainCause: 'outcome-unknown', reconstructed: false });
    expect(timedOut?.stages.find((s) => s.id === 'mounted')?.detail).toBe('SetUp timed out or its result is unknown; the reconciler retries');
    expect(rowStageText(timedOut as NonNullable<typeof timedOut>)).toBe('uncertain: mounted into pod');
  });

  it('a reconstruction report alone (same desired and actual arrays) changes the row’s wording', () => {
    const select = createVolumeRowsSelector();
    const before = webConfigUncertain(false);
    const after: Snapshot = { ...before, seq: before.seq + 1, reconstruction: webConfigUncertain(true).reconstruction };
    expect(webConfig(before, select(before))?.uncertainCause).toBe('outcome-unknown');
    expect(webConfig(after, select(after))?.uncertainCause).toBe('found-on-disk');
  });
});
