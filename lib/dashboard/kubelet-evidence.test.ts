import { describe, expect, it } from 'vitest';
import { SCRATCH, SCRATCH_ERROR, SCRATCH_FAILED_AT, observedSnapshot, observedSection, scratchBackoff, scratchPlanned } from '../api/testing/observe-fixtures.ts';
import { exampleSnapshot, generatedPod } from '../api/testing/snapshot-fixtures.ts';
import { kubeletEvidenceOf, kubeletOperations, kubeletProgress, notOnNodeText } from './kubelet-evidence.ts';
import { podMarkdownSummary } from './markdown-summary.ts';
import { deriveVolumeRows, findPod, type VolumeRow } from './pipeline.ts';

function row(rows: readonly VolumeRow[], podUid: string, volume: string): VolumeRow {
  const found = rows.find((r) => r.podUid === podUid && r.volumeName === volume);
  if (found === undefined) throw new Error(`no row ${podUid}/${volume}`);
  return found;
}

const stageOf = (r: VolumeRow, id: string) => r.stages.find((s) => s.id === id);

describe('observe mode feeds the views the kubelet’s evidence', () => {
  it('a SetUp-failed event makes the pod’s mount the blocking stage, with attach done as far as the kubelet is concerned, never "not verified yet"', () => {
    // Arrange: pod b's scratch is nowhere on disk; the kubelet's FailedMount says MountVolume.SetUp failed.
    const rows = deriveVolumeRows(observedSnapshot());

    // Act
    const scratch = row(rows, 'uid-b', 'scratch');

    // Assert
    expect(scratch.blocking?.id).toBe('mounted');
    expect(scratch.blocking?.detail).toBe('the kubelet’s MountVolume.SetUp failed (its FailedMount)');
    expect(stageOf(scratch, 'attached')).toEqual({ id: 'attached', status: 'done', detail: 'done as far as the kubelet is concerned: its MountVolume.SetUp failed, a later step' });
    expect(JSON.stringify(scratch.stages)).not.toContain('not verified yet');
    expect(scratch.state).toBe('backoff');
    // The error, the event's time and the backoff are the plan's.
    expect(scratch.operation).toMatchObject({ operationName: 'volume_mount', state: 'backoff', lastError: SCRATCH_ERROR, lastErrorAt: SCRATCH_FAILED_AT, retryAt: SCRATCH_FAILED_AT + 64_000, durationBeforeRetryMs: 64_000, failures: 7 });
    expect(scratch.kubelet?.backoff).toEqual(scratchBackoff());
    expect(scratch.observed).toBe(true);
  });

  it('a failed device step makes the device mount blocking and attach done; an event naming no known step changes no stage', () => {
    const pod = generatedPod(1);
    const volume = pod.volumes[0];
    if (volume === undefined) throw new Error('generated pod without volumes');
    const withBackoff = (operation: string | undefined) => ({
      ...observedSnapshot(),
      desired: { pods: [pod] },
      actual: { volumes: [] },
      observe: observedSection({ plan: [{ ...scratchPlanned(scratchBackoff({ operation })), volume: volume.uniqueVolumeName, podUid: pod.uid }] }),
    });
    const r = row(deriveVolumeRows(withBackoff('MountVolume.MountDevice')), pod.uid, volume.name);
    expect(stageOf(r, 'attached')?.status).toBe('done');
    expect(r.blocking?.id).toBe('device-mounted');
    expect(r.blocking?.detail).toBe('the kubelet’s MountVolume.MountDevice failed (its FailedMount)');

    const u = row(deriveVolumeRows(withBackoff(undefined)), pod.uid, volume.name);
    expect(u.blocking?.id).toBe('attached');
    expect(u.blocking?.detail).toBe('not attached to the node yet');
    expect(kubeletProgress({ operation: 'AttachVolume.Attach' })).toBe('unknown');
  });

  it('words every stage for the mode: the kubelet in observe mode, the reconciler in managed mode', () => {
    const observed = deriveVolumeRows(observedSnapshot());
    const orphan = row(observed, 'uid-o2', 'x');
    expect(stageOf(orphan, 'desired')?.detail).toBe('no pod wants it any more: the kubelet tears it down (unmounts or removes it)');
    expect(stageOf(row(observed, 'uid-a', 'cache'), 'mounted')?.detail).toMatch(/^found on disk, not confirmed \(the agent rebuilt it from the kubelet’s root dir/);
    expect(JSON.stringify(observed.map((r) => r.stages))).not.toContain('reconciler');

    // Without any evidence, a volume observe mode finds nowhere is not "not verified yet" either.
    const noEvidence = deriveVolumeRows(observedSnapshot({ plan: [] }));
    expect(stageOf(row(noEvidence, 'uid-b', 'scratch'), 'attached')?.detail).toBe('nothing of it on disk yet, and no kubelet event says how far it got');

    const managed = deriveVolumeRows({ ...exampleSnapshot(), desired: { pods: [] } });
    expect(managed.every((r) => !r.observed && r.kubelet === null)).toBe(true);
    expect(managed.map((r) => stageOf(r, 'desired')?.detail)).toContain('not in the desired world any more: the reconciler will unmount it');
  });

  it('turns only plan entries with a kubelet backoff into operations, the same objects while the plan is the same', () => {
    const observe = observedSection();
    const ops = kubeletOperations(observe);
    expect(ops.map((o) => o.volume)).toEqual([SCRATCH]);
    expect(kubeletOperations(observe)).toBe(ops);
    expect(kubeletEvidenceOf(ops[0] ?? null)?.planned).toBe(observe.plan[0]);
    expect(kubeletEvidenceOf(exampleSnapshot().operations[0] ?? null)).toBeNull();
    expect(kubeletOperations(undefined)).toEqual([]);
  });

  it('the pod’s Markdown carries the kubelet’s error, its event and time, and the backoff the plan shows', () => {
    const snapshot = observedSnapshot();
    const pod = findPod(snapshot, 'uid-b');
    if (pod === null) throw new Error('pod b not found');
    const md = podMarkdownSummary({ node: 'observer', pod, now: SCRATCH_FAILED_AT + 7_000, snapshot, baseUrl: null });
    expect(md).toContain(String.raw`mkdir\: no space left on device (the kubelet’s FailedMount at 2026-11-30 08:01:00 UTC)`);
    expect(md).toContain('retry in 0:57 (2026-11-30 08:02:04 UTC, durationBeforeRetry 1m4s)');
    expect(md).toContain('waiting: mounted into pod');
  });

  it('the volume page says how far the kubelet got when nothing of the volume is on disk', () => {
    const rows = deriveVolumeRows(observedSnapshot()).filter((r) => r.uniqueVolumeName === SCRATCH);
    expect(notOnNodeText(true, rows)).toBe(
      'Nothing of it on disk in the kubelet’s root dir; the kubelet’s event shows it got as far as MountVolume.SetUp, which failed (the steps before it are done as far as the kubelet is concerned).',
    );
    expect(notOnNodeText(true, [])).toBe('Nothing of it on disk in the kubelet’s root dir, and no kubelet event says how far it got.');
    expect(notOnNodeText(false, rows)).toBe('Not in the actual state: not attached (or not verified) on this node yet.');
  });
});
