import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jsonEqual } from './json-equal.ts';
import { SnapshotSchema } from './snapshot.ts';
import { FIXTURE_T0, emptySnapshot, exampleSnapshot } from './testing/snapshot-fixtures.ts';
import { AgentSummarySchema, summarizeSnapshot } from './summary.ts';

describe('summarizeSnapshot', () => {
  it('counts the example node', () => {
    expect(summarizeSnapshot(exampleSnapshot())).toEqual({
      nodeName: 'node-a',
      seq: 42,
      statesSynced: true,
      agent: { version: '0.1.0', startedAt: FIXTURE_T0 },
      mode: 'managed',
      mounter: { kind: 'linux', privileged: true },
      counts: { pods: 2, desiredVolumes: 3, mounted: 2, uncertain: 1, pending: 1, inBackoff: 1, running: 0, retrying: 0, podErrors: 1, sourceErrors: 0, foundDetached: 0 },
      reconstruction: {
        state: 'done',
        startedAt: exampleSnapshot().reconstruction.startedAt,
        finishedAt: exampleSnapshot().reconstruction.finishedAt,
        outcomes: { reconstructed: 0, 'confirmed-mounted': 1, 'cleaned-up': 0, failed: 0 },
      },
      drivers: { total: 1, registered: 1, failing: 0 },
    });
  });

  it('says observe mode when the snapshot has an observe section', () => {
    const observe = { kubeletRootDir: '/var/lib/kubelet', refreshedAt: null, refreshError: null, plan: [], orphans: [], orphansTruncated: false, truthDiff: [], cleanupAllowed: false };
    expect(summarizeSnapshot({ ...exampleSnapshot(), observe }).mode).toBe('observe');
    expect(summarizeSnapshot(exampleSnapshot()).mode).toBe('managed');
  });

  it('counts the orphans and the VolumeAttachments with an attach error in observe mode, and leaves them out in managed mode', () => {
    // Arrange: two orphaned pod directories; one volume with two VolumeAttachments, one failing to attach, one failing to detach only.
    const orphan = (podUid: string) => ({ podUid, path: `/var/lib/kubelet/pods/${podUid}`, modifiedAt: 0, verdict: 'no-volume-dirs' as const, explanation: '', volumes: [], leftovers: [], mounts: [] });
    const va = (name: string, attachError: string | null, detachError: string | null) => ({ name, attached: false, attachError, detachError, deleting: false });
    const row = {
      key: 'csi/v',
      volume: 'csi/v',
      desiredPods: ['p1'],
      inUse: true,
      attachedDevicePath: null,
      volumeAttachments: [va('csi-1', 'rpc error: code = Internal', null), va('csi-2', null, 'rpc error: code = Unavailable')],
      globalMounts: [],
      podMounts: [],
      findings: [],
    };
    const observe = { kubeletRootDir: '/var/lib/kubelet', refreshedAt: null, refreshError: null, plan: [], orphans: [orphan('a'), orphan('b')], orphansTruncated: false, truthDiff: [row], cleanupAllowed: false };

    // Act + Assert
    expect(summarizeSnapshot({ ...exampleSnapshot(), observe }).observe).toEqual({ orphans: 2, attachErrors: 1, outstanding: 0, failing: 0 });
    expect(summarizeSnapshot(exampleSnapshot())).not.toHaveProperty('observe');
  });

  it('counts uncertain attaches, device mounts and pod mounts, and a mount of a pod no longer desired', () => {
    // Arrange: one volume attached uncertainly, device-mounted uncertainly, with one uncertain and
    // one mounted pod mount; only the uncertain one's pod is desired.
    const snapshot = emptySnapshot({
      desired: { pods: [{ uid: 'p1', namespace: 'ns', name: 'a', volumes: [{ name: 'v', uniqueVolumeName: 'x/v', pluginName: 'x', attachable: true, deviceMountable: true, reportedInUse: true }] }] },
      actual: {
        volumes: [
          {
            uniqueVolumeName: 'x/v',
            pluginName: 'x',
            attachState: 'uncertain',
            devicePath: '',
            deviceMountState: 'uncertain',
            deviceMountPath: '',
            pods: [
              { podUid: 'p1', podName: 'p1', podNamespace: 'ns', outerVolumeName: 'v', mountState: 'uncertain', remountRequired: false },
              { podUid: 'p2', podName: 'p2', podNamespace: 'ns', outerVolumeName: 'v', mountState: 'mounted', remountRequired: false },
            ],
          },
        ],
      },
    });

    // Act
    const counts = summarizeSnapshot(SnapshotSchema.parse(snapshot)).counts;

    // Assert
    expect(counts).toMatchObject({ pods: 1, desiredVolumes: 1, mounted: 1, uncertain: 3, pending: 1 });
  });
});

describe('docs/api.md, GET /api/v1/summary', () => {
  const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  // The summary example is fenced `json summary`, so the generic example check (docs.test.ts,
  // which matches plain `json` fences against the other schemas) leaves it to this test.
  const examples = [...doc.matchAll(/```json summary\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  const snapshotExample = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1] ?? '') as unknown).find((json) => SnapshotSchema.safeParse(json).success);

  it('has one summary example, fitting the schema exactly (nothing stripped)', () => {
    expect(examples).toHaveLength(1);
    const json: unknown = JSON.parse(examples[0] ?? '');
    const parsed = AgentSummarySchema.parse(json);
    expect(jsonEqual(parsed, json)).toBe(true);
  });

  it('is the summary of the snapshot example', () => {
    expect(JSON.parse(examples[0] ?? '')).toEqual(summarizeSnapshot(SnapshotSchema.parse(snapshotExample)));
  });
});
