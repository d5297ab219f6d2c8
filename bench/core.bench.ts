/**
 * `npm run bench:core`: the engine's speed and memory, as JSON on stdout.
 *
 * - reconcilePass: median and p99 of one steady-state reconciler pass (everything desired is
 *   mounted, nothing to do) at 1k / 10k / 50k mounted (pod, volume) entries, and the growth
 *   ratio per 10× entries (linear = 10).
 * - changeToStart: from a desired-world change (a pod added) to the start of its mount
 *   operation's plugin call, with a no-op plugin, on the real clock.
 * - heapBytesPerMountedEntry: retained heap per (pod, volume) entry in both worlds.
 *
 * Targets (issue "Volume manager core"): ≤ 1 ms median at 10k, linear growth, change→start ≤ 5 ms median.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realClock } from '../lib/clock/clock.ts';
import type { Pod } from '../lib/volume/k8s-types.ts';
import { specFromVolume } from '../lib/volume/spec.ts';
import { nodeName, podUID, uniquePodName, type PodUID } from '../lib/volume/types.ts';
// The benchmark drives the engine's parts by hand (passes, worlds), as its tests do.
import { volumeManagerInternals } from '../lib/volumemanager/internals.ts';
import { VolumeManager } from '../lib/volumemanager/index.ts';
import { NoopPlugin } from './noop-plugin.ts';

const VOLUMES_PER_POD = 5;

function makePod(i: number): Pod {
  const volumes = Array.from({ length: VOLUMES_PER_POD }, (_, v) => ({ name: `vol-${v}`, emptyDir: {} }));
  return {
    metadata: { name: `pod-${i}`, namespace: 'bench', uid: `uid-${i}` },
    spec: { volumes, containers: [{ name: 'c', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/m/${v.name}` })) }] },
  };
}

function newManager(rootDir: string, plugin: NoopPlugin, pods: Map<string, Pod>): VolumeManager {
  return new VolumeManager({
    nodeName: nodeName('bench-node'),
    rootDir,
    plugins: [plugin],
    podManager: { getPods: () => [...pods.values()], getPodByUID: (uid: PodUID) => pods.get(uid) },
    podStateProvider: {
      shouldPodContainersBeTerminating: (uid) => !pods.has(uid),
      shouldPodRuntimeBeRemoved: (uid) => !pods.has(uid),
    },
    sourcesReady: { allReady: () => true },
    kubeClient: {
      getPersistentVolumeClaim: () => Promise.reject(new Error('none')),
      getPersistentVolume: () => Promise.reject(new Error('none')),
    },
    clock: realClock,
    controllerAttachDetachEnabled: false,
  });
}

/** Fills both worlds directly with `entries` mounted (pod, volume) pairs. */
function populate(vm: VolumeManager, entries: number, pods: Map<string, Pod>): void {
  const engine = volumeManagerInternals(vm);
  for (let i = 0; i < entries / VOLUMES_PER_POD; i++) {
    const pod = makePod(i);
    pods.set(pod.metadata.uid ?? '', pod);
    const podName = uniquePodName(pod.metadata.uid ?? '');
    for (const volume of pod.spec.volumes ?? []) {
      const spec = specFromVolume(volume);
      const volumeName = engine.dsw.addPodToVolume(podName, pod, spec, volume.name, '', []);
      engine.asw.markVolumeAsAttached(volumeName, spec, vm.nodeName, '');
      engine.asw.markVolumeAsMounted({
        podName,
        podUID: podUID(podName),
        volumeName,
        mounter: null,
        blockVolumeMapper: null,
        outerVolumeSpecName: volume.name,
        volumeGidValue: '',
        volumeSpec: spec,
        volumeMountState: 'VolumeMounted',
        seLinuxMountContext: '',
      });
    }
  }
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? Number.NaN;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

interface PassFigures {
  entries: number;
  /** A steady-state pass: nothing changed since the last one (dirty + unsettled + sweep slice). */
  medianMs: number;
  p99Ms: number;
  /** A pass that re-examines every entry, as after a start or a readyToUnmount change. */
  fullScanMedianMs: number;
  fullScanP99Ms: number;
  samples: number;
}

async function benchPass(entries: number, rootDir: string): Promise<PassFigures> {
  const pods = new Map<string, Pod>();
  const vm = newManager(rootDir, new NoopPlugin(), pods);
  const engine = volumeManagerInternals(vm);
  engine.populator.setHasAddedPods(true);
  populate(vm, entries, pods);
  const samples = entries >= 50_000 ? 60 : entries >= 10_000 ? 200 : 1000;
  for (let i = 0; i < 20; i++) await engine.reconciler.reconcile(); // warm-up (JIT)
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await engine.reconciler.reconcile();
    times.push(performance.now() - t0);
  }
  const fullTimes: number[] = [];
  for (let i = 0; i < Math.min(samples, 100); i++) {
    engine.reconciler.markDirty(null);
    const t0 = performance.now();
    await engine.reconciler.reconcile();
    fullTimes.push(performance.now() - t0);
  }
  if (engine.pendingOperations.size() !== 0) throw new Error('steady state expected: no operation may start');
  times.sort((a, b) => a - b);
  fullTimes.sort((a, b) => a - b);
  return {
    entries,
    medianMs: round(percentile(times, 50)),
    p99Ms: round(percentile(times, 99)),
    fullScanMedianMs: round(percentile(fullTimes, 50)),
    fullScanP99Ms: round(percentile(fullTimes, 99)),
    samples,
  };
}

async function benchChangeToStart(rootDir: string): Promise<{ background: number; samples: number; medianMs: number; p99Ms: number }> {
  const pods = new Map<string, Pod>();
  const plugin = new NoopPlugin();
  const vm = newManager(rootDir, plugin, pods);
  const engine = volumeManagerInternals(vm);
  const background = 1_000;
  populate(vm, background, pods);
  engine.populator.setHasAddedPods(true);
  vm.start();
  await vm.waitForOperations();
  const samples = 200;
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const pod = makePod(100_000 + i);
    // The pod must exist in the pod manager, or the populator removes it again at once.
    pods.set(pod.metadata.uid ?? '', pod);
    const volume = { name: 'vol-0', emptyDir: {} };
    const started = new Promise<number>((resolve) => {
      plugin.onSetUp = () => {
        resolve(performance.now());
      };
    });
    const t0 = performance.now();
    engine.dsw.addPodToVolume(uniquePodName(pod.metadata.uid ?? ''), pod, specFromVolume(volume), volume.name, '', []);
    times.push((await started) - t0);
    plugin.onSetUp = null;
    await vm.waitForOperations();
  }
  await vm.stop();
  times.sort((a, b) => a - b);
  return { background, samples, medianMs: round(percentile(times, 50)), p99Ms: round(percentile(times, 99)) };
}

function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

function benchHeap(rootDir: string): { entries: number; heapBytesPerMountedEntry: number; gcExposed: boolean } {
  const entries = 50_000;
  const before = heapUsed();
  const pods = new Map<string, Pod>();
  const vm = newManager(rootDir, new NoopPlugin(), pods);
  const engine = volumeManagerInternals(vm);
  populate(vm, entries, pods);
  const after = heapUsed();
  // Keep the manager alive until after the measurement.
  if (engine.asw.countMountedVolumes() !== entries) throw new Error('population failed');
  return {
    entries,
    heapBytesPerMountedEntry: Math.round((after - before) / entries),
    gcExposed: typeof (globalThis as { gc?: unknown }).gc === 'function',
  };
}

async function main(): Promise<void> {
  const rootDir = mkdtempSync(join(tmpdir(), 'vs-bench-core-'));
  try {
    const passes = [];
    for (const n of [1_000, 10_000, 50_000]) {
      passes.push(await benchPass(n, rootDir));
      process.stderr.write(`bench:core reconcile pass at ${n} entries measured\n`);
    }
    const [p1k, p10k, p50k] = passes;
    const growth = {
      per10xFrom1kTo10k: p1k !== undefined && p10k !== undefined ? round(p10k.medianMs / p1k.medianMs) : null,
      per5xFrom10kTo50k: p10k !== undefined && p50k !== undefined ? round(p50k.medianMs / p10k.medianMs) : null,
      perEntryNsAt10k: p10k !== undefined ? round((p10k.medianMs * 1e6) / p10k.entries) : null,
      perEntryNsAt50k: p50k !== undefined ? round((p50k.medianMs * 1e6) / p50k.entries) : null,
      fullScanPer10xFrom1kTo10k: p1k !== undefined && p10k !== undefined ? round(p10k.fullScanMedianMs / p1k.fullScanMedianMs) : null,
      fullScanPer5xFrom10kTo50k: p10k !== undefined && p50k !== undefined ? round(p50k.fullScanMedianMs / p10k.fullScanMedianMs) : null,
    };
    const changeToStart = await benchChangeToStart(rootDir);
    const heap = benchHeap(rootDir);
    const result = {
      benchmark: 'core',
      node: process.version,
      reconcilePass: passes,
      growth,
      changeToStart,
      heap,
      targets: {
        reconcilePassMedianMsAt10k: 1,
        changeToStartMedianMs: 5,
        met: {
          reconcilePassAt10k: (p10k?.medianMs ?? Infinity) <= 1,
          changeToStart: changeToStart.medianMs <= 5,
        },
      },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    rmSync(rootDir, { recursive: true, force: true });
  }
}

await main();
