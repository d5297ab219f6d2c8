import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OrphanCleanupResponse } from '../api/actions.ts';
import { formatGoDuration } from '../volume/util/go-format.ts';
import { ObserveSchema, type KubeletBackoff, type OrphanPod, type OrphanVolume, type PlannedOperation, type TruthDiffRow } from '../api/observe.ts';
import {
  CLEANUP_DISABLED_REASON,
  OBSERVE_ROW_CAP,
  backoffBasisNote,
  capRows,
  cleanupAvailabilityFor,
  describeOrphanCleanup,
  durationBeforeRetryText,
  failedChecks,
  findingSeverityLabel,
  formatBytes,
  formatElapsed,
  kubeletBackoffTiming,
  orphanCleanupAvailability,
  orphanFileTotals,
  orphanVerdictLabel,
  orphanVolumeDetail,
  orphanVolumeStateLabel,
  outstandingText,
  sortOrphans,
  sortPlan,
  summarizeCleanupResult,
  truthDiffCounts,
  truthDiffRowsShown,
  worstSeverityRank,
} from './observe-view.ts';

const T0 = Date.UTC(2026, 10, 30, 8, 0, 0);
const ROOT = '/var/lib/kubelet';

function planned(key: string, since: number, backoff: KubeletBackoff | null = null): PlannedOperation {
  const [operation = 'volume_mount', volume = 'v', podUid = ''] = key.split('|');
  return {
    key,
    operation,
    volume,
    podUid: podUid === '' ? null : podUid,
    pod: podUid === '' ? null : `default/${podUid}`,
    outerVolumeName: podUid === '' ? null : 'data',
    reason: 'desired but not mounted',
    since,
    kubeletBackoff: backoff,
  };
}

function backoff(retryAt: number, basis: KubeletBackoff['basis'] = 'message'): KubeletBackoff {
  return { retryAt, durationBeforeRetryMs: 64_000, error: 'rpc error: code = Internal desc = staging failed', observedAt: T0, basis };
}

function volume(state: OrphanVolume['state'], extra: Partial<OrphanVolume> = {}): OrphanVolume {
  return {
    path: `${ROOT}/pods/u/volumes/kubernetes.io~csi/pv-${state}`,
    pluginName: 'kubernetes.io/csi',
    volumeName: `pv-${state}`,
    state,
    explanation: `it is ${state}`,
    mounts: [],
    files: 0,
    bytes: 0,
    volData: null,
    truncated: false,
    ...extra,
  };
}

function orphan(podUid: string, verdict: OrphanPod['verdict'], modifiedAt: number, extra: Partial<OrphanPod> = {}): OrphanPod {
  return { podUid, path: `${ROOT}/pods/${podUid}`, modifiedAt, verdict, explanation: verdict, volumes: [], leftovers: [], mounts: [], ...extra };
}

function truthRow(key: string, severities: TruthDiffRow['findings'][number]['severity'][]): TruthDiffRow {
  return {
    key,
    volume: key,
    desiredPods: null,
    inUse: false,
    attachedDevicePath: null,
    volumeAttachments: [],
    globalMounts: [],
    podMounts: [],
    findings: severities.map((severity, i) => ({ code: `finding-${i}`, severity, explanation: `${severity} ${i}` })),
  };
}

function cleanupResponse(extra: Partial<OrphanCleanupResponse>): OrphanCleanupResponse {
  return { podUid: 'uid-1', outcome: 'planned', unmounts: [], removals: [], kept: [], failures: [], checks: [], ...extra };
}

describe('live texts', () => {
  it.each([
    { title: 'under a minute in seconds', ms: 42_999, text: '42s' },
    { title: 'minutes and seconds', ms: 192_000, text: '3m 12s' },
    { title: 'hours and minutes', ms: 3_600_000 + 4 * 60_000 + 59_000, text: '1h 4m' },
    { title: 'days and hours', ms: 2 * 86_400_000 + 3 * 3_600_000, text: '2d 3h' },
    { title: 'a negative elapsed time (browser clock behind) as 0', ms: -5000, text: '0s' },
  ])('formatElapsed shows $title', ({ ms, text }) => {
    expect(formatElapsed(ms)).toBe(text);
  });

  it('outstandingText counts from `since` to `now`', () => {
    expect(outstandingText(T0, T0 + 192_000)).toBe('outstanding for 3m 12s');
  });

  it.each([
    { ms: 500, text: '500ms' },
    { ms: 1000, text: '1s' },
    { ms: 1500, text: '1.5s' },
    { ms: 64_000, text: '1m4s' },
    { ms: 122_000, text: '2m2s' },
    { ms: 3_600_000, text: '1h0m0s' },
    { ms: 0, text: '0s' },
  ])('formatGoDuration($ms) is $text, as the kubelet prints durationBeforeRetry', ({ ms, text }) => {
    expect(formatGoDuration(ms)).toBe(text);
  });

  it.each([
    { title: 'counts down with seconds rounded up', now: T0 + 3001, text: 'retry in 0:57', kind: 'retry-in' },
    { title: 'never shows 0:00 while still waiting', now: T0 + 59_999, text: 'retry in 0:01', kind: 'retry-in' },
    { title: 'is due exactly at retryAt', now: T0 + 60_000, text: 'retry due', kind: 'retry-due' },
    { title: 'stays due after retryAt', now: T0 + 600_000, text: 'retry due', kind: 'retry-due' },
  ])('the kubelet backoff countdown $title', ({ now, text, kind }) => {
    const timing = kubeletBackoffTiming(backoff(T0 + 60_000), now);
    expect(timing.text).toBe(text);
    expect(timing.kind).toBe(kind);
  });

  describe('with a fake clock', () => {
    beforeEach(() => {
      vi.useFakeTimers();
      vi.setSystemTime(T0);
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('the countdown and the outstanding time move with the clock', () => {
      const op = planned('volume_mount|pv-1|uid-1', T0 - 10_000, backoff(T0 + 5_000));
      const read = () => ({ retry: kubeletBackoffTiming(op.kubeletBackoff ?? backoff(0), Date.now()).text, outstanding: outstandingText(op.since, Date.now()) });
      expect(read()).toEqual({ retry: 'retry in 0:05', outstanding: 'outstanding for 10s' });
      vi.advanceTimersByTime(4_000);
      expect(read()).toEqual({ retry: 'retry in 0:01', outstanding: 'outstanding for 14s' });
      vi.advanceTimersByTime(1_000);
      expect(read()).toEqual({ retry: 'retry due', outstanding: 'outstanding for 15s' });
    });
  });

  it('durationBeforeRetry and the estimate note read as the kubelet and the contract say', () => {
    expect(durationBeforeRetryText(backoff(T0))).toBe('durationBeforeRetry 1m4s');
    expect(backoffBasisNote(backoff(T0, 'event-count'))).toBe('(estimated from event count)');
    expect(backoffBasisNote(backoff(T0, 'message'))).toBeNull();
  });
});

describe('order and filters', () => {
  it('sortPlan puts the longest outstanding first, then orders by key, without mutating its input', () => {
    const plan = [planned('volume_mount|b|', T0), planned('volume_mount|a|', T0), planned('unmount_device|c|', T0 - 1)];
    const before = plan.map((p) => p.key);
    expect(sortPlan(plan).map((p) => p.key)).toEqual(['unmount_device|c|', 'volume_mount|a|', 'volume_mount|b|']);
    expect(plan.map((p) => p.key)).toEqual(before);
  });

  it('sortOrphans puts the most dangerous verdict first, then the oldest, then by pod UID', () => {
    const orphans = [
      orphan('e', 'no-volume-dirs', T0 - 99_000),
      orphan('b', 'volume-data', T0),
      orphan('a', 'volume-data', T0),
      orphan('c', 'volume-data', T0 - 1000),
      orphan('d', 'mounted', T0),
      orphan('f', 'empty-volume-dirs', T0),
      orphan('g', 'vol-data-only', T0),
    ];
    expect(sortOrphans(orphans).map((o) => o.podUid)).toEqual(['d', 'c', 'a', 'b', 'g', 'f', 'e']);
  });

  it('truth diff rows: only those with findings by default, worst severity first, then by key', () => {
    const rows = [truthRow('z-info', ['info']), truthRow('clean', []), truthRow('b-warn', ['warning', 'info']), truthRow('a-warn', ['warning']), truthRow('y-error', ['info', 'error'])];
    expect(truthDiffRowsShown(rows, false).map((r) => r.key)).toEqual(['y-error', 'a-warn', 'b-warn', 'z-info']);
    expect(truthDiffRowsShown(rows, true).map((r) => r.key)).toEqual(['y-error', 'a-warn', 'b-warn', 'z-info', 'clean']);
    expect(truthDiffCounts(rows)).toEqual({ total: 5, withFindings: 4 });
    expect(worstSeverityRank(truthRow('x', []))).toBe(3);
  });

  it.each([
    { title: 'a short list whole', length: 5, showAll: false, shown: 5, hidden: 0 },
    { title: 'exactly the cap whole', length: OBSERVE_ROW_CAP, showAll: false, shown: OBSERVE_ROW_CAP, hidden: 0 },
    { title: 'a long list cut at the cap', length: OBSERVE_ROW_CAP + 51, showAll: false, shown: OBSERVE_ROW_CAP, hidden: 51 },
    { title: 'a long list whole after show all', length: OBSERVE_ROW_CAP + 51, showAll: true, shown: OBSERVE_ROW_CAP + 51, hidden: 0 },
  ])('capRows shows $title', ({ length, showAll, shown, hidden }) => {
    const rows = Array.from({ length }, (_, i) => i);
    const capped = capRows(rows, showAll);
    expect(capped.shown.length).toBe(shown);
    expect(capped.hidden).toBe(hidden);
    expect(capped.shown[0]).toBe(0);
  });
});

describe('state labels are words with icons', () => {
  it('every verdict, volume state and severity has a distinct word and an icon', () => {
    const verdicts = ObserveSchema.shape.orphans.element.shape.verdict.options.map(orphanVerdictLabel);
    const states = ObserveSchema.shape.orphans.element.shape.volumes.element.shape.state.options.map(orphanVolumeStateLabel);
    const severities = (['error', 'warning', 'info'] as const).map(findingSeverityLabel);
    for (const labels of [verdicts, states, severities]) {
      expect(new Set(labels.map((l) => l.label)).size).toBe(labels.length);
      for (const l of labels) expect(l.icon).not.toBe('');
    }
    expect(orphanVerdictLabel('mounted')).toMatchObject({ tone: 'bad', label: 'still mounted' });
    expect(findingSeverityLabel('error').tone).toBe('bad');
  });

  it.each([
    { title: 'files and bytes of a non-empty path', v: volume('non-empty', { files: 3, bytes: 1536 }), text: '3 files, 1.5 KiB' },
    { title: 'lower bounds when the walk was truncated', v: volume('non-empty', { files: 1, bytes: 10, truncated: true }), text: 'at least 1 file, at least 10 B' },
    { title: 'driver and handle from vol_data.json', v: volume('has-vol-data', { volData: { driverName: 'csi.example.com', volumeHandle: 'vol-42' } }), text: 'driver csi.example.com, volume handle vol-42' },
    { title: 'unknown driver and handle', v: volume('has-vol-data', { volData: null }), text: 'driver unknown driver, volume handle unknown handle' },
    {
      title: 'the mount count of a mount point',
      v: volume('mount-point', { mounts: [{ mountPoint: '/m', fsType: 'ext4', source: '/dev/sdb' }] }),
      text: '1 mount at or below it',
    },
    { title: 'empty', v: volume('empty'), text: 'empty' },
  ])('orphanVolumeDetail says $title', ({ v, text }) => {
    expect(orphanVolumeDetail(v)).toBe(text);
  });

  it.each([
    { bytes: 0, text: '0 B' },
    { bytes: 1023, text: '1023 B' },
    { bytes: 1024, text: '1.0 KiB' },
    { bytes: 5 * 1024 ** 3, text: '5.0 GiB' },
  ])('formatBytes($bytes) is $text', ({ bytes, text }) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('orphan cleanup', () => {
  it.each([
    { title: 'allowed with the flag on a reachable agent', allowed: true, phase: 'live' as const, expected: { allowed: true } },
    { title: 'refused without --allow-orphan-cleanup', allowed: false, phase: 'live' as const, expected: { allowed: false, reason: CLEANUP_DISABLED_REASON } },
    { title: 'refused while the agent is unreachable', allowed: true, phase: 'unavailable' as const, expected: { allowed: false, reason: 'the agent is unreachable' } },
  ])('is $title', ({ allowed, phase, expected }) => {
    expect(orphanCleanupAvailability({ cleanupAllowed: allowed }, phase)).toEqual(expected);
  });

  it('is refused with the agent\'s reason while its mount table does not describe the root dir', () => {
    const reason = 'the mount table does not describe the kubelet root dir: …';
    expect(orphanCleanupAvailability({ cleanupAllowed: true, cleanupBlocked: reason }, 'live')).toEqual({ allowed: false, reason });
    expect(orphanCleanupAvailability({ cleanupAllowed: true, cleanupBlocked: null }, 'live')).toEqual({ allowed: true });
  });

  it('the confirmation says exactly how many mounts go below which path, and that files stay', () => {
    const o = orphan('uid-1', 'mounted', T0, {
      mounts: [
        { mountPoint: `${ROOT}/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount`, fsType: 'ext4', source: '/dev/sdb' },
        { mountPoint: `${ROOT}/pods/uid-1/volume-subpaths/pv-1/app/0`, fsType: 'ext4', source: '/dev/sdb' },
      ],
      volumes: [volume('non-empty', { files: 2, bytes: 2048 }), volume('empty')],
    });
    const text = describeOrphanCleanup('node-a', o);
    expect(text).toContain('pod uid-1 on node-a');
    expect(text).toContain(
      `unmounts exactly 2 mounts: ${ROOT}/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount (ext4 from /dev/sdb), ${ROOT}/pods/uid-1/volume-subpaths/pv-1/app/0 (ext4 from /dev/sdb) below ${ROOT}/pods/uid-1, then removes only empty directories; files are never deleted; refused if any check fails.`,
    );
    expect(text).toContain('The 2 files (2.0 KiB) in it stay');
  });

  it('the confirmation of an orphan without mounts or files says it unmounts nothing and nothing about files', () => {
    const text = describeOrphanCleanup('node-a', orphan('uid-2', 'empty-volume-dirs', T0, { volumes: [volume('empty')] }));
    expect(text).toContain(`unmounts nothing below ${ROOT}/pods/uid-2`);
    expect(text).not.toContain('stay');
    expect(orphanFileTotals({ volumes: [volume('non-empty', { files: 1, bytes: 1, truncated: true }), volume('non-empty', { files: 2, bytes: 3 })] })).toEqual({
      files: 3,
      bytes: 4,
      truncated: true,
    });
  });

  it('a dry run that unmounts nothing says so', () => {
    expect(summarizeCleanupResult(cleanupResponse({ outcome: 'planned', removals: ['/c'] })).headline).toBe(
      'Dry run for pod uid-1: would unmount nothing and remove 1 empty directory; 0 kept. Nothing was changed.',
    );
  });

  it('Clean up is refused for an orphan whose verdict says the kubelet has to unmount first, and follows the node otherwise', () => {
    const mounted = orphan('uid-1', 'mounted', T0);
    expect(cleanupAvailabilityFor(mounted, { allowed: true })).toEqual({ allowed: false, reason: `the kubelet has to unmount first (${mounted.explanation})` });
    expect(cleanupAvailabilityFor(orphan('uid-2', 'empty-volume-dirs', T0), { allowed: true })).toEqual({ allowed: true });
    expect(cleanupAvailabilityFor(mounted, { allowed: false, reason: 'the agent is unreachable' })).toEqual({ allowed: false, reason: 'the agent is unreachable' });
  });

  it.each([
    {
      title: 'a dry run as a plan that changed nothing',
      r: cleanupResponse({ outcome: 'planned', unmounts: ['/a', '/b'], removals: ['/c'], kept: [{ path: '/d', reason: 'a file' }] }),
      tone: 'ok',
      headline: 'Dry run for pod uid-1: would unmount exactly 2 mounts: /a, /b and remove 1 empty directory; 1 kept. Nothing was changed.',
    },
    {
      title: 'a completed cleanup as what was done',
      r: cleanupResponse({ outcome: 'completed', unmounts: ['/a'], removals: ['/c', '/e'] }),
      tone: 'ok',
      headline: 'Cleaned up pod uid-1: unmounted 1 mount, removed 2 empty directories; 0 kept.',
    },
    {
      title: 'an aborted cleanup as a failure with what was done before',
      r: cleanupResponse({ outcome: 'aborted', unmounts: ['/a'], failures: [{ path: '/b', step: 'unmount', message: 'device busy' }] }),
      tone: 'bad',
      headline: 'Aborted for pod uid-1 after unmounting 1 mount and removing 0 empty directories; 1 failure, 0 kept.',
    },
    {
      title: 'nothing to do when the directory is gone',
      r: cleanupResponse({ outcome: 'not-found' }),
      tone: 'ok',
      headline: 'Nothing to do: the directory of pod uid-1 is already gone.',
    },
  ])('summarizeCleanupResult shows $title', ({ r, tone, headline }) => {
    const s = summarizeCleanupResult(r);
    expect(s.tone).toBe(tone);
    expect(s.headline).toBe(headline);
  });

  it('failedChecks keeps only the failed checks, in order', () => {
    const checks = [
      { name: 'a', ok: true, detail: '' },
      { name: 'b', ok: false, detail: 'pod is known to the API' },
      { name: 'c', ok: false, detail: 'a container runs' },
    ];
    expect(failedChecks(checks).map((c) => c.name)).toEqual(['b', 'c']);
  });
});
