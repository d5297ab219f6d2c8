/**
 * The engine side of the differential test: plays a trace on the TypeScript reconciler, worlds
 * and operation executor with the fake volume plugin (one per disk, as the Go oracle does), on a
 * fake clock, and reads the same observable state as upstream/kube/differential after every step.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attacher, DeviceMounter, Mounter, Unmounter } from '../../lib/volume/plugins.ts';
import { UncertainProgressError } from '../../lib/volume/errors.ts';
import { specFromVolume, type Spec } from '../../lib/volume/spec.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import { FakeVolumePlugin } from '../../lib/volume/testing/fake-volume-plugin.ts';
import { formatGoDuration } from '../../lib/volume/util/go-format.ts';
import { uniquePodName, uniqueVolumeName, type PodUID } from '../../lib/volume/types.ts';
import { Harness, testNodeName } from '../../lib/volumemanager/testing/harness.ts';
import { desiredOrder, disksOf, loopSleepMs, operationOrder, phaseMs, settleMs, uniqueNameOf, volumeOrder, type Counts, type ObservedState, type Step, type Trace } from './trace.ts';

/** A call an outcome step acts on (docs/differential.md). */
export type OutcomeCall = Extract<Step, { op: 'outcome' }>['call'];

/**
 * The outcome steps' outcomes of the next call of an operation on a disk, as the oracle's
 * `outcomes` (upstream/kube/differential/fake_disk_test.go): "final" fails it, "uncertain" fails
 * it with an uncertain progress error, "hang" blocks it until the kubelet stops or the trace
 * ends, "success" (or none) passes it through. An intercepted call is not in the call counts.
 */
export class Outcomes {
  private readonly next = new Map<string, Extract<Step, { op: 'outcome' }>['outcome']>();
  private hung: (() => void)[] = [];
  /** While true (a kubelet process stops), a "hang" returns at once as released: see {@link whileStopping}. */
  private released = false;

  set(disk: string, call: OutcomeCall, outcome: Extract<Step, { op: 'outcome' }>['outcome']): void {
    this.next.set(`${disk}|${call}`, outcome);
  }

  /** Every hung call returns (with a final error). */
  releaseHung(): void {
    for (const release of this.hung.splice(0)) release();
  }

  /**
   * Runs `stop` (a harness close: it waits for every running operation) with every hung call
   * released and every call that starts meanwhile returning at once as released: an operation
   * the stopping process had started may make its hung call only after the release, and would
   * then never finish (the close times out). At the trace's end the oracle's calls behave the
   * same (endTrace); at a restart it leaves such a call blocked in the stopped process, which
   * neither side observes (an intercepted call never reaches the fake plugin).
   */
  async whileStopping(stop: () => Promise<void>): Promise<void> {
    this.released = true;
    this.releaseHung();
    try {
      await stop();
    } finally {
      this.released = false;
    }
  }

  /** Runs `call` unless the disk's next outcome of `name` replaces it. */
  take<T>(disk: string, name: OutcomeCall, call: () => Promise<T>): Promise<T> {
    const outcome = this.next.get(`${disk}|${name}`);
    this.next.delete(`${disk}|${name}`);
    switch (outcome) {
      case 'final':
        return Promise.reject(new Error(`fake ${name} final error`));
      case 'uncertain':
        return Promise.reject(new UncertainProgressError(`fake ${name} uncertain error`));
      case 'hang':
        if (this.released) return Promise.reject(new Error(`fake ${name} released`));
        return new Promise<T>((_, reject) => {
          this.hung.push(() => {
            reject(new Error(`fake ${name} released`));
          });
        });
      default:
        return call();
    }
  }
}

/**
 * The fake plugin with upstream's fake disk: a successful SetUp creates the pod volume directory
 * and TearDown removes it (pkg/volume/testing FakeVolume SetUpAt / TearDownAt), so a restart
 * reconstructs from what the previous run left, as the oracle's does. Its SetUp, Attach,
 * MountDevice and VolumesAreAttached take the outcome steps' outcomes first.
 */
class DiskFakeVolumePlugin extends FakeVolumePlugin {
  constructor(
    private readonly disk: string,
    private readonly outcomes: Outcomes,
  ) {
    super({ name: `fake-plugin-${disk}`, canSupport: (spec) => spec.volume?.gcePersistentDisk?.pdName === disk });
  }

  override newMounter(spec: Spec, pod: Pod): Mounter {
    const mounter = super.newMounter(spec, pod);
    return {
      ...mounter,
      setUp: (args) => this.outcomes.take(this.disk, 'setUp', () => mounter.setUp(args)).then(() => void mkdirSync(mounter.getPath(), { recursive: true })),
    };
  }

  override newUnmounter(name: string, podUID: PodUID): Unmounter {
    const unmounter = super.newUnmounter(name, podUID);
    return { ...unmounter, tearDown: () => unmounter.tearDown().then(() => { rmSync(unmounter.getPath(), { recursive: true, force: true }); }) };
  }

  override newAttacher(): Attacher {
    const attacher = super.newAttacher();
    return {
      ...attacher,
      attach: (spec, node) => this.outcomes.take(this.disk, 'attach', () => attacher.attach(spec, node)),
      mountDevice: (spec, devicePath, deviceMountPath, args) =>
        this.outcomes.take(this.disk, 'mountDevice', () => attacher.mountDevice(spec, devicePath, deviceMountPath, args)),
      // Upstream's FakeVolume.VolumesAreAttached reports nothing (a nil map): no volume is found
      // detached. The engine's fake answers from its attach records, which a controller attach
      // never fills; the call is counted as it would be.
      volumesAreAttached: (specs, node) =>
        this.outcomes.take(this.disk, 'volumesAreAttached', () => attacher.volumesAreAttached(specs, node).then(() => new Map<Spec, boolean>())),
    };
  }

  override newDeviceMounter(): DeviceMounter {
    return this.newAttacher();
  }
}

/** One kubelet run: worlds, executor and reconciler over the shared root dir and plugins. */
function startRun(trace: Trace, rootDir: string, plugins: FakeVolumePlugin[], pods: ReadonlyMap<string, Pod>, attached: readonly string[]): Harness {
  const h = new Harness({
    plugins,
    rootDir,
    reconcilerLoopPeriodMs: loopSleepMs,
    controllerAttachDetachEnabled: trace.controllerAttach === true,
  });
  // The node outlives the kubelet: its attachments carry over a restart.
  h.kube.setVolumesAttached(attached.map((disk) => ({ name: uniqueNameOf(disk), devicePath: 'fake/path' })));
  // The node lister the kubelet reads before verifying a controller attach
  // (GetAttachedVolumesFromNodeStatus), serving the same node as the API, as the oracle's host.
  Object.assign(h.kube, {
    getAttachedVolumesFromNodeStatus: () => new Map((h.kube.node?.status?.volumesAttached ?? []).map((a) => [a.name, a.devicePath])),
  });
  h.populator.setHasAddedPods(true);
  // Passes on wait.Until's grid: the engine's extra pass right after a change (docs/engine.md,
  // Scheduling) would run a failed operation's retry up to a period earlier than upstream.
  h.reconciler.kick = () => undefined;
  for (const name of [...pods.keys()].sort()) addToDesired(h, pods.get(name) as Pod);
  h.reconciler.start();
  return h;
}

function addToDesired(h: Harness, pod: Pod): void {
  for (const volume of pod.spec.volumes ?? []) {
    h.dsw.addPodToVolume(uniquePodName(pod.metadata.uid ?? ''), pod, specFromVolume(volume), volume.name, '', []);
  }
}

export async function playOnEngine(trace: Trace): Promise<ObservedState[]> {
  const outcomes = new Outcomes();
  const plugins = disksOf(trace).map((disk) => new DiskFakeVolumePlugin(disk, outcomes));
  const rootDir = mkdtempSync(join(tmpdir(), 'vs-differential-'));
  const pods = new Map<string, Pod>();
  const states: ObservedState[] = [];
  const node = { attached: [] as string[] };
  let h = startRun(trace, rootDir, plugins, pods, node.attached);
  try {
    await h.clock.advance(phaseMs);
    for (const [i, step] of trace.steps.entries()) {
      if (step.op === 'restart') {
        // The kubelet stops (running operations finish: the fake calls take no time) and starts
        // again on the same root dir and plugins, on the pass grid (as the oracle does). A hung
        // call returns: the process it hung in is gone.
        const stopping = h;
        await outcomes.whileStopping(() => stopping.close());
        for (const p of step.removed ?? []) pods.delete(p);
        h = startRun(trace, rootDir, plugins, pods, node.attached);
        await h.clock.advance(phaseMs);
      } else {
        if (step.op === 'nodeStatus') node.attached = step.attached;
        if (step.op === 'outcome') outcomes.set(step.disk, step.call, step.outcome);
        else await apply(h, pods, step);
      }
      await h.clock.advance(settleMs);
      states.push({ ...observe(h, plugins), step: i });
    }
  } finally {
    const last = h;
    await outcomes.whileStopping(() => last.close());
    rmSync(rootDir, { recursive: true, force: true });
  }
  return states;
}

async function apply(h: Harness, pods: Map<string, Pod>, step: Exclude<Step, { op: 'restart' | 'outcome' }>): Promise<void> {
  switch (step.op) {
    case 'addPod': {
      const pod: Pod = {
        metadata: { name: step.pod, uid: `${step.pod}uid`, namespace: 'default' },
        spec: { nodeName: testNodeName, volumes: step.volumes.map((v) => ({ name: v.name, gcePersistentDisk: { pdName: v.disk } })), containers: [] },
      };
      pods.set(step.pod, pod);
      addToDesired(h, pod);
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
    case 'verifyAttachments':
      // Started, not awaited: the oracle's VerifyVolumesAreAttached runs in the background too.
      h.vm.verifyAttachedVolumes().catch(() => undefined);
      return;
  }
}

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
    .sort(volumeOrder);
  const desired = h.dsw
    .getVolumesToMount()
    .map((v) => ({ volume: v.volumeName, pod: v.podName, reportedInUse: v.reportedInUse }))
    .sort(desiredOrder);
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
    .sort(operationOrder);
  const counts: Counts = { attach: 0, waitForAttach: 0, mountDevice: 0, setUp: 0, tearDown: 0, unmountDevice: 0, detach: 0 };
  for (const p of plugins) for (const k of Object.keys(counts) as (keyof Counts)[]) counts[k] += p.counts[k];
  return { volumes, desired, operations, counts };
}
