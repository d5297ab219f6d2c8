import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { computeDelta } from '../../lib/api/delta.ts';
import { normalizeSnapshot } from '../../lib/api/normalize-snapshot.ts';
import { SnapshotSchema, type ActualVolume, type ContainerState } from '../../lib/api/snapshot.ts';
import type { Pod, Volume } from '../../lib/volume/k8s-types.ts';
import type { VolumeMountState } from '../../lib/volumemanager/index.ts';
import { specFromVolume } from '../../lib/volume/spec.ts';
import { pluginName, podUID, uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../../lib/volume/types.ts';
import { gcePdVolume, Harness, makeKubeletDir, makePod, syncHostFs, testNodeName } from '../../lib/volumemanager/testing/harness.ts';
import { SnapshotBuilder } from './snapshot-builder.ts';
import { FakeAgentRuntime } from './testing/fake-agent-runtime.ts';

/** Attaches `volume` and mounts it for the pod `uid` in the actual state only. */
function mountInActual(harness: Harness, uid: string, volume: Volume, volumeName: UniqueVolumeName, mountState: VolumeMountState, devicePath: string): void {
  const spec = specFromVolume(volume);
  harness.asw.markVolumeAsAttached(volumeName, spec, testNodeName, devicePath);
  harness.asw.markVolumeAsMounted({
    podName: uniquePodName(uid),
    podUID: podUID(uid),
    volumeName,
    mounter: null,
    blockVolumeMapper: null,
    outerVolumeSpecName: volume.name,
    volumeGidValue: '',
    volumeSpec: spec,
    volumeMountState: mountState,
    seLinuxMountContext: '',
  });
}

/** Fills both worlds directly: `pods` pods with one GCE PD each, attached and mounted. */
function populate(harness: Harness, pods: number, namespace = 'default'): UniqueVolumeName[] {
  const names: UniqueVolumeName[] = [];
  for (let i = 0; i < pods; i++) {
    const volume = gcePdVolume(`vol-${i}`, `pd-${i}`);
    const pod: Pod = makePod([volume], { uid: `uid-${i}`, name: `pod-${i}`, namespace });
    const volumeName = harness.dsw.addPodToVolume(uniquePodName(`uid-${i}`), pod, specFromVolume(volume), volume.name, '', []);
    mountInActual(harness, `uid-${i}`, volume, volumeName, 'VolumeMounted', `/dev/sd${i}`);
    names.push(volumeName);
  }
  return names;
}

describe('SnapshotBuilder', () => {
  let harness: Harness | undefined;
  const tempDirs: string[] = [];
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const setup = (): { h: Harness; runtime: FakeAgentRuntime; builder: SnapshotBuilder } => {
    const h = new Harness();
    harness = h;
    const runtime = new FakeAgentRuntime(h);
    return { h, runtime, builder: new SnapshotBuilder(runtime, () => []) };
  };

  it('maps a mounted pod of the engine to the contract', async () => {
    // Arrange
    const { h, runtime, builder } = setup();
    h.pods.add(makePod([gcePdVolume()], { namespace: 'web' }));
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1 && h.vm.reconcilerStatesHasBeenSynced());

    // Act
    const { snapshot } = builder.initial();

    // Assert
    expect(SnapshotSchema.parse(snapshot)).toEqual(snapshot);
    expect(snapshot).toMatchObject({
      nodeName: 'mynodename',
      seq: 0,
      statesSynced: true,
      agent: { version: '0.1.0-test', startedAt: runtime.startedAt },
      mounter: { kind: 'unprivileged', privileged: false },
      operations: [],
      podErrors: {},
      reconstruction: { state: 'done', volumes: [] },
    });
    expect(snapshot.desired.pods).toEqual([
      {
        uid: 'pod1uid',
        namespace: 'web',
        name: 'pod1',
        volumes: [
          {
            name: 'volume-name',
            uniqueVolumeName: 'fake-plugin/fake-device1',
            pluginName: 'fake-plugin',
            attachable: true,
            deviceMountable: true,
            reportedInUse: false,
            // The pod spec's source and the container's mount, as written.
            spec: {
              sourceType: 'gcePersistentDisk',
              source: [{ path: 'pdName', value: 'fake-device1' }],
              mounts: [{ container: 'c', mountPath: '/mnt/volume-name', readOnly: false }],
            },
          },
        ],
      },
    ]);
    expect(snapshot.actual.volumes).toEqual([
      {
        uniqueVolumeName: 'fake-plugin/fake-device1',
        pluginName: 'fake-plugin',
        attachState: 'attached',
        devicePath: '/dev/sdb',
        deviceMountState: 'mounted',
        deviceMountPath: '',
        pods: [
          {
            podUid: 'pod1uid',
            podName: 'pod1uid',
            podNamespace: 'web',
            outerVolumeName: 'volume-name',
            mountState: 'mounted',
            remountRequired: false,
          },
        ],
      },
    ]);
  });

  it.each([
    {
      name: 'attached, device mounted, pod mounted',
      arrange: (_h: Harness, v: UniqueVolumeName) => v,
      want: { attachState: 'attached', deviceMountState: 'mounted', mountState: 'mounted', remountRequired: false },
    },
    {
      name: 'attach uncertain after reconstruction',
      arrange: (h: Harness) => {
        const reconstructed = 'fake-plugin/pd-r' as UniqueVolumeName;
        h.asw.addAttachUncertainReconstructedVolume(reconstructed, specFromVolume(gcePdVolume('vol-r', 'pd-r')), testNodeName, '');
        return reconstructed;
      },
      want: { attachState: 'uncertain', deviceMountState: 'not-mounted', mountState: null, remountRequired: null },
    },
    {
      name: 'device mount uncertain',
      arrange: (h: Harness, v: UniqueVolumeName) => {
        h.asw.markDeviceAsUncertain(v, '/dev/sd0', '/global/pd-0', '');
        return v;
      },
      want: { attachState: 'attached', deviceMountState: 'uncertain', mountState: 'mounted', remountRequired: false },
    },
    {
      name: 'pod mount uncertain and remount required',
      arrange: (h: Harness, v: UniqueVolumeName) => {
        const spec = specFromVolume(gcePdVolume('vol-0', 'pd-0'));
        h.asw.markVolumeMountAsUncertain({
          podName: uniquePodName('uid-0'),
          podUID: podUID('uid-0'),
          volumeName: v,
          mounter: null,
          blockVolumeMapper: null,
          outerVolumeSpecName: 'vol-0',
          volumeGidValue: '',
          volumeSpec: spec,
          volumeMountState: 'VolumeMountUncertain',
          seLinuxMountContext: '',
        });
        h.asw.markRemountRequired(uniquePodName('uid-0'));
        return v;
      },
      want: { attachState: 'attached', deviceMountState: 'not-mounted', mountState: 'uncertain', remountRequired: null },
    },
  ])('maps the actual state: $name', ({ arrange, want }) => {
    const { h, builder } = setup();
    const [volume] = populate(h, 1);
    if (volume === undefined) throw new Error('no volume');
    if (want.deviceMountState === 'mounted') h.asw.markDeviceAsMounted(volume, '/dev/sd0', '/global/pd-0', '');
    const inspected = arrange(h, volume);

    const actual = builder.initial().snapshot.actual.volumes.find((v) => v.uniqueVolumeName === inspected);

    expect(actual?.attachState).toBe(want.attachState);
    expect(actual?.deviceMountState).toBe(want.deviceMountState);
    if (want.mountState !== null) expect(actual?.pods[0]?.mountState).toBe(want.mountState);
    if (want.remountRequired !== null) expect(actual?.pods[0]?.remountRequired).toBe(want.remountRequired);
  });

  it("shows a failing mount's history, keeps its object while it does not change, and keeps it after the success", async () => {
    // Arrange: a mount that fails twice
    const { h, builder } = setup();
    let failing = true;
    h.plugin.waitForAttachHook = () => (failing ? Promise.reject(new Error('disk not ready')) : Promise.resolve('/dev/sdb'));
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    await h.until(() => h.records.filter((r) => r.outcome === 'failure').length === 2);
    const failed = builder.initial();
    const same = builder.build(failed, 1);

    // Act
    failing = false;
    h.vm.retryNow(uniqueVolumeName('fake-plugin/fake-device1'), null);
    await h.until(() => h.asw.getMountedVolumes().length === 1);
    const mounted = builder.build(same, 2);

    // Assert
    const [history] = failed.snapshot.operationHistory.filter((o) => o.operationName === 'volume_mount');
    expect(history).toMatchObject({ podUid: null, attemptsTotal: 2, succeededAt: null });
    expect(history?.attempts.map((a) => a.error?.includes('disk not ready'))).toEqual([true, true]);
    expect(same.snapshot.operationHistory).toBe(failed.snapshot.operationHistory);
    const after = mounted.snapshot.operationHistory.find((o) => o.operationName === 'volume_mount');
    expect(after).toMatchObject({ firstFailureAt: history?.firstFailureAt, attemptsTotal: 3, succeededAt: expect.any(Number) as unknown });
    expect(mounted.snapshot.operations.filter((o) => o.operationName === 'volume_mount')).toEqual([]);
    expect(SnapshotSchema.parse(mounted.snapshot)).toEqual(mounted.snapshot);
  });

  it("shows a desired pod's status.phase as its source has it, and rebuilds the pod when the phase changes", () => {
    // Arrange: pod-0 without a status (a manifest), pod-1 Pending
    const { h, builder } = setup();
    populate(h, 2);
    const volume = gcePdVolume('vol-1', 'pd-1');
    const readd = (phase: 'Pending' | 'Running'): void => {
      const pod: Pod = { ...makePod([volume], { uid: 'uid-1', name: 'pod-1', namespace: 'default' }), status: { phase } };
      h.dsw.addPodToVolume(uniquePodName('uid-1'), pod, specFromVolume(volume), volume.name, '', []);
    };
    readd('Pending');
    const first = builder.initial();

    // Act: the kubelet reports the pod Running (the source publishes the update; the populator re-adds it)
    readd('Running');
    const next = builder.build(first, 1);

    // Assert
    expect(first.snapshot.desired.pods.map((p) => [p.name, p.phase])).toEqual([
      ['pod-0', undefined],
      ['pod-1', 'Pending'],
    ]);
    expect(next.snapshot.desired.pods[1]?.phase).toBe('Running');
    expect(next.snapshot.desired.pods[0]).toBe(first.snapshot.desired.pods[0]);
    expect(first.snapshot.desired.pods[0]).not.toHaveProperty('phase');
  });

  it("carries a pod's containers' states from the runtime, rebuilds only that pod when they change, and invents none", () => {
    // Arrange: two pods; the API source has container statuses for pod-1 only
    const { h, runtime, builder } = setup();
    populate(h, 2);
    const creating: ContainerState = { name: 'app', kind: 'container', state: 'waiting', reason: 'ContainerCreating', since: 1_000, sinceObserved: true, ready: false, restartCount: 0 };
    runtime.setContainerStates('uid-1', [creating]);
    const first = builder.initial();

    // Act: the kubelet starts the container
    runtime.setContainerStates('uid-1', [{ ...creating, state: 'running', since: 2_000, sinceObserved: false, ready: true }]);
    const next = builder.build(first, 1);
    const same = builder.build(next, 2);

    // Assert
    expect(first.snapshot.desired.pods[0]).not.toHaveProperty('containers');
    expect(first.snapshot.desired.pods[1]?.containers).toEqual([creating]);
    expect(next.snapshot.desired.pods[1]?.containers?.[0]).toMatchObject({ state: 'running', since: 2_000 });
    expect(next.snapshot.desired.pods[0]).toBe(first.snapshot.desired.pods[0]);
    expect(same.snapshot.desired).toBe(next.snapshot.desired);
    expect(SnapshotSchema.parse(next.snapshot)).toEqual(next.snapshot);
    expect(computeDelta(first.snapshot, next.snapshot).desiredPods?.upsert?.map((p) => p.uid)).toEqual(['uid-1']);
  });

  it('reuses every part when nothing changed, and only the changed item otherwise', () => {
    // Arrange
    const { h, builder } = setup();
    const volumes = populate(h, 3);
    const first = builder.initial();

    // Act
    const same = builder.build(first, 1);
    h.asw.markDeviceAsMounted(volumes[1] as UniqueVolumeName, '/dev/sd1', '/global/pd-1', '');
    const changed = builder.build(same, 2);

    // Assert: nothing changed: whole sections are the previous objects
    expect(same.snapshot.desired).toBe(first.snapshot.desired);
    expect(same.snapshot.actual).toBe(first.snapshot.actual);
    expect(same.snapshot.operations).toBe(first.snapshot.operations);
    expect(same.snapshot.reconstruction).toBe(first.snapshot.reconstruction);
    expect(same.snapshot.attachVerification).toBe(first.snapshot.attachVerification);
    // Assert: one volume changed: the other two are the previous objects
    const before = first.snapshot.actual.volumes;
    const after = changed.snapshot.actual.volumes;
    expect(after).not.toBe(before);
    expect(after.map((v, i) => v === before[i])).toEqual([true, false, true]);
    expect(changed.snapshot.desired).toBe(first.snapshot.desired);
    expect(computeDelta(same.snapshot, changed.snapshot)).toEqual({ fromSeq: 1, seq: 2, actualVolumes: { upsert: [after[1]] } });
  });

  it('builds with reuse exactly what it builds from scratch, through adds, changes and removals', () => {
    // Arrange: pods with one or two volumes
    const { h, builder } = setup();
    const add = (i: number, volumes: number): UniqueVolumeName[] => {
      const specs = Array.from({ length: volumes }, (_, v) => gcePdVolume(`v${v}`, `pd-${i}-${v}`));
      const pod = makePod(specs, { uid: `uid-${i}`, name: `pod-${i}`, namespace: `ns-${i % 3}` });
      return specs.map((volume) => h.dsw.addPodToVolume(uniquePodName(`uid-${i}`), pod, specFromVolume(volume), volume.name, '', []));
    };
    const steps: { name: string; act: () => void }[] = [
      {
        name: 'pods added',
        act: () => {
          for (const i of [3, 1, 2]) add(i, i === 2 ? 2 : 1);
        },
      },
      { name: 'a pod added between others', act: () => add(0, 1) },
      {
        name: 'one volume reported in use',
        act: () => {
          h.dsw.markVolumesReportedInUse(['fake-plugin/pd-2-1']);
        },
      },
      {
        name: 'one volume of a two-volume pod removed',
        act: () => {
          h.dsw.deletePodFromVolume(uniquePodName('uid-2'), 'fake-plugin/pd-2-0' as UniqueVolumeName);
        },
      },
      {
        name: 'a pod removed',
        act: () => {
          h.dsw.deletePodFromVolume(uniquePodName('uid-1'), 'fake-plugin/pd-1-0' as UniqueVolumeName);
        },
      },
      {
        name: 'a volume attached and a pod mounted',
        act: () => {
          const volume = gcePdVolume('v0', 'pd-3-0');
          const spec = specFromVolume(volume);
          const name = 'fake-plugin/pd-3-0' as UniqueVolumeName;
          h.asw.markVolumeAsAttached(name, spec, testNodeName, '/dev/x');
          h.asw.markVolumeAsMounted({
            podName: uniquePodName('uid-3'),
            podUID: podUID('uid-3'),
            volumeName: name,
            mounter: null,
            blockVolumeMapper: null,
            outerVolumeSpecName: 'v0',
            volumeGidValue: '',
            volumeSpec: spec,
            volumeMountState: 'VolumeMounted',
            seLinuxMountContext: '',
          });
        },
      },
      {
        // (While the mount remained, a build with reuse would remember the pod's namespace, which
        // a build from scratch cannot know; that is tested on its own below.)
        name: 'every pod removed and unmounted',
        act: () => {
          h.dsw.getVolumesToMount().forEach((v) => {
            h.dsw.deletePodFromVolume(v.podName, v.volumeName);
          });
          h.asw.markVolumeAsUnmounted(uniquePodName('uid-3'), 'fake-plugin/pd-3-0' as UniqueVolumeName);
        },
      },
    ];
    let built = builder.initial();

    for (const [i, step] of steps.entries()) {
      // Act
      step.act();
      built = builder.build(built, i + 1);

      // Assert: the same as a build from scratch, and the index points at the items
      expect(built.snapshot, step.name).toEqual(builder.build(null, i + 1).snapshot);
      built.snapshot.desired.pods.forEach((pod, pos) => {
        expect(built.index.desiredPods.get(pod.uid), step.name).toBe(pos);
      });
      expect(built.index.desiredPods.size, step.name).toBe(built.snapshot.desired.pods.length);
      built.snapshot.actual.volumes.forEach((volume, pos) => {
        expect(built.index.actualVolumes.get(volume.uniqueVolumeName), step.name).toBe(pos);
      });
    }
    expect(built.snapshot.desired.pods).toEqual([]);
  });

  it('produces normalized snapshots whatever the engine order', () => {
    const { h, builder } = setup();
    for (const i of [5, 1, 9, 3]) {
      const volume = gcePdVolume(`v-${i}`, `pd-${i}`);
      h.dsw.addPodToVolume(uniquePodName(`uid-${i}`), makePod([volume], { uid: `uid-${i}` }), specFromVolume(volume), volume.name, '', []);
    }

    const { snapshot } = builder.initial();

    expect(normalizeSnapshot(snapshot)).toBe(snapshot);
    expect(snapshot.desired.pods.map((p) => p.uid)).toEqual(['uid-1', 'uid-3', 'uid-5', 'uid-9']);
  });

  it('keeps the namespace of a pod that left the desired state while its mount remains, also in a snapshot built from scratch', () => {
    // Arrange
    const { h, builder } = setup();
    const [volume] = populate(h, 1, 'team-a');
    if (volume === undefined) throw new Error('no volume');
    const first = builder.initial();

    // Act
    h.dsw.deletePodFromVolume(uniquePodName('uid-0'), volume);
    const orphan = builder.build(first, 1);
    const fresh = builder.build(null, 1);

    // Assert
    expect(orphan.snapshot.desired.pods).toEqual([]);
    expect(orphan.snapshot.actual.volumes[0]?.pods[0]?.podNamespace).toBe('team-a');
    expect(fresh.snapshot).toEqual(orphan.snapshot);
  });

  it('shows no namespace for a mount of a pod the desired state never had (found by reconstruction only)', () => {
    // Arrange: a mount in the actual state only
    const { h, builder } = setup();
    mountInActual(h, 'uid-r', gcePdVolume('vol-r', 'pd-r'), uniqueVolumeName('fake-plugin/pd-r'), 'VolumeMountUncertain', '/dev/sdr');

    // Act
    const { snapshot } = builder.initial();

    // Assert
    expect(snapshot.actual.volumes[0]?.pods[0]).not.toHaveProperty('podNamespace');
  });

  it('reads pod errors from the engine at every build', () => {
    const { h, builder } = setup();
    const first = builder.initial();

    h.dsw.addErrorToPod(uniquePodName('uid-x'), 'error processing PVC ns/c: PVC is not bound');
    const next = builder.build(first, 1);

    expect(next.snapshot.podErrors).toEqual({ 'uid-x': ['error processing PVC ns/c: PVC is not bound'] });
    expect(builder.build(next, 2).snapshot.podErrors).toBe(next.snapshot.podErrors);
  });

  it.each([
    { outcome: 'reconstructed', want: 'reconstructed', error: null, resolvedAt: null, at: 100 },
    { outcome: 'failed', want: 'failed', error: 'no plugin', resolvedAt: null, at: 100 },
    { outcome: 'confirmed-mounted', want: 'confirmed-mounted', error: null, resolvedAt: 250, at: 250 },
    { outcome: 'cleaned-up', want: 'cleaned-up', error: null, resolvedAt: 300, at: 300 },
    { outcome: 'skipped', want: 'confirmed-mounted', error: null, resolvedAt: 100, at: 100 },
  ] as const)('reports the reconstruction outcome $outcome as $want', ({ outcome, want, error, resolvedAt, at }) => {
    const { h, builder } = setup();
    vi.spyOn(h.vm, 'getReconstructionReport').mockReturnValue({
      state: 'done',
      startedAt: 50,
      finishedAt: 120,
      error: null,
      entries: [
        {
          podName: uniquePodName('pod1uid'),
          volumeSpecName: 'data',
          pluginName: pluginName('kubernetes.io/csi'),
          volumeMode: 'Filesystem',
          keptBecause: null,
          volumePath: '/var/lib/kubelet/pods/pod1uid/volumes/kubernetes.io~csi/data/mount',
          volumeName: null,
          outcome,
          error,
          scannedAt: 100,
          resolvedAt,
        },
      ],
    });

    const { reconstruction } = builder.initial().snapshot;

    expect(reconstruction).toEqual({
      state: 'done',
      startedAt: 50,
      finishedAt: 120,
      volumes: [{ podUid: 'pod1uid', volumeName: 'data', pluginName: 'kubernetes.io/csi', outcome: want, error, at }],
    });
  });

  it('reports a reconstruction of the engine after a restart', async () => {
    // Arrange: a volume directory of pod1 on disk
    const root = makeKubeletDir(['pod1uid/volumes/fake-plugin/volume-name']);
    tempDirs.push(root);
    const h = new Harness({ rootDir: root, hostFs: syncHostFs });
    harness = h;
    const builder = new SnapshotBuilder(new FakeAgentRuntime(h), () => []);
    h.kube.setVolumesAttached([]);

    // Act
    h.start();
    await h.until(() => h.vm.reconcilerStatesHasBeenSynced() && h.vm.getReconstructionReport().entries.every((e) => e.resolvedAt !== null));
    const { snapshot } = builder.initial();

    // Assert
    expect(SnapshotSchema.safeParse(snapshot).success).toBe(true);
    expect(snapshot.reconstruction).toMatchObject({ state: 'done', volumes: [{ podUid: 'pod1uid', volumeName: 'volume-name', pluginName: 'fake-plugin' }] });
  });

  it('diffs one change at 10k volumes into a delta of one volume, reusing the other 9,999', () => {
    // Arrange
    const { h, builder } = setup();
    const volumes = populate(h, 10_000);
    const first = builder.initial();

    // Act
    h.asw.markDeviceAsMounted(volumes[4_321] as UniqueVolumeName, '/dev/sd4321', '/global/pd-4321', '');
    const next = builder.build(first, 1);
    const delta = computeDelta(first.snapshot, next.snapshot);

    // Assert
    const reused = next.snapshot.actual.volumes.filter((v, i) => v === first.snapshot.actual.volumes[i]).length;
    expect(reused).toBe(9_999);
    expect(next.snapshot.desired).toBe(first.snapshot.desired);
    expect(Object.keys(delta).sort()).toEqual(['actualVolumes', 'fromSeq', 'seq']);
    expect(delta.actualVolumes?.upsert?.map((v: ActualVolume) => v.uniqueVolumeName)).toEqual(['fake-plugin/pd-4321']);
    expect(JSON.stringify(delta).length).toBeLessThan(1_000);
  });
});
