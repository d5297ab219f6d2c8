/**
 * The engine side of the differential test: plays a trace on the TypeScript reconciler, worlds
 * and operation executor with the fake volume plugin (one per disk, as the Go oracle does), on a
 * fake clock, and reads the same observable state as upstream/kube/differential after every step.
 */
import { specFromVolume } from '../../lib/volume/spec.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import { FakeVolumePlugin } from '../../lib/volume/testing/fake-volume-plugin.ts';
import { formatGoDuration } from '../../lib/volume/util/go-format.ts';
import { uniquePodName, uniqueVolumeName } from '../../lib/volume/types.ts';
import type { HostFs } from '../../lib/volume/util/host-fs.ts';
import { Harness, testNodeName } from '../../lib/volumemanager/testing/harness.ts';
import { disksOf, loopSleepMs, phaseMs, settleMs, uniqueNameOf, type Counts, type ObservedState, type Step, type Trace } from './trace.ts';

/** Pods dir with nothing in it: the first start reconstructs nothing, as the oracle's empty dir. */
const emptyHostFs: HostFs = { readDir: () => Promise.resolve([]) };

export async function playOnEngine(trace: Trace): Promise<ObservedState[]> {
  const plugins = disksOf(trace).map(
    (disk) => new FakeVolumePlugin({ name: `fake-plugin-${disk}`, canSupport: (spec) => spec.volume?.gcePersistentDisk?.pdName === disk }),
  );
  const h = new Harness({
    plugins,
    hostFs: emptyHostFs,
    reconcilerLoopPeriodMs: loopSleepMs,
    controllerAttachDetachEnabled: trace.controllerAttach === true,
  });
  h.kube.setVolumesAttached([]);
  // The node lister the kubelet reads before verifying a controller attach
  // (GetAttachedVolumesFromNodeStatus), serving the same node as the API, as the oracle's host.
  Object.assign(h.kube, {
    getAttachedVolumesFromNodeStatus: () => new Map((h.kube.node?.status?.volumesAttached ?? []).map((a) => [a.name, a.devicePath])),
  });
  const pods = new Map<string, Pod>();
  const states: ObservedState[] = [];
  try {
    h.populator.setHasAddedPods(true);
    // Passes on wait.Until's grid: the engine's extra pass right after a change (docs/engine.md,
    // Scheduling) would run a failed operation's retry up to a period earlier than upstream.
    h.reconciler.kick = () => undefined;
    h.reconciler.start();
    await h.clock.advance(phaseMs);
    for (const [i, step] of trace.steps.entries()) {
      await apply(h, pods, step);
      await h.clock.advance(settleMs);
      states.push({ ...observe(h, plugins), step: i });
    }
  } finally {
    await h.close();
  }
  return states;
}

async function apply(h: Harness, pods: Map<string, Pod>, step: Step): Promise<void> {
  switch (step.op) {
    case 'addPod': {
      const pod: Pod = {
        metadata: { name: step.pod, uid: `${step.pod}uid`, namespace: 'default' },
        spec: { nodeName: testNodeName, volumes: step.volumes.map((v) => ({ name: v.name, gcePersistentDisk: { pdName: v.disk } })), containers: [] },
      };
      pods.set(step.pod, pod);
      for (const volume of pod.spec.volumes ?? []) {
        h.dsw.addPodToVolume(uniquePodName(`${step.pod}uid`), pod, specFromVolume(volume), volume.name, '', []);
      }
      return;
    }
    case 'removePod': {
      const pod = pods.get(step.pod);
      if (pod === undefined) throw new Error(`unknown pod "${step.pod}"`);
      for (const volume of pod.spec.volumes ?? []) {
        h.dsw.deletePodFromVolume(uniquePodName(`${step.pod}uid`), uniqueVolumeName(uniqueNameOf(volume.gcePersistentDisk?.pdName ?? '')));
      }
      pods.delete(step.pod);
      return;
    }
    case 'advance':
      await h.clock.advance(step.ms);
      return;
    case 'markInUse':
      h.dsw.markVolumesReportedInUse(step.inUse);
      return;
    case 'nodeStatus':
      h.kube.setVolumesAttached(step.attached.map((disk) => ({ name: uniqueNameOf(disk), devicePath: 'fake/path' })));
      return;
  }
}

const byKeys = <T>(...keys: ((x: T) => string)[]) => (a: T, b: T): number => {
  for (const k of keys) {
    const ka = k(a);
    const kb = k(b);
    if (ka !== kb) return ka < kb ? -1 : 1;
  }
  return 0;
};

function observe(h: Harness, plugins: readonly FakeVolumePlugin[]): Omit<ObservedState, 'step'> {
  const pods = new Map<string, Record<string, string>>();
  for (const m of h.asw.getAllMountedVolumes()) {
    const entry = pods.get(m.volumeName) ?? {};
    entry[m.podName] = m.volumeMountState;
    pods.set(m.volumeName, entry);
  }
  const volumes = h.asw
    .getAttachedVolumes()
    .map((av) => ({ volume: av.volumeName, attachable: av.pluginIsAttachable, device: av.deviceMountState, pods: pods.get(av.volumeName) ?? {} }))
    .sort(byKeys((v) => v.volume));
  const desired = h.dsw
    .getVolumesToMount()
    .map((v) => ({ volume: v.volumeName, pod: v.podName, reportedInUse: v.reportedInUse }))
    .sort(byKeys((d) => d.volume, (d) => d.pod));
  const operations = h.pendingOperations
    .list()
    .map((o) => ({
      volume: o.key.volumeName,
      pod: o.key.podName,
      name: o.operationName,
      pending: o.pending,
      durationBeforeRetry: formatGoDuration(o.durationBeforeRetry),
      lastError: o.lastError ?? '',
    }))
    .sort(byKeys((o) => o.volume, (o) => o.pod, (o) => o.name));
  const counts: Counts = { attach: 0, waitForAttach: 0, mountDevice: 0, setUp: 0, tearDown: 0, unmountDevice: 0, detach: 0 };
  for (const p of plugins) for (const k of Object.keys(counts) as (keyof Counts)[]) counts[k] += p.counts[k];
  return { volumes, desired, operations, counts };
}
