import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../operationexecutor/operation-executor.ts';
import { VolumePluginMgr } from '../../volume/plugins.ts';
import { specFromVolume } from '../../volume/spec.ts';
import { FakeVolumePlugin } from '../../volume/testing/fake-volume-plugin.ts';
import { nodeName, pluginName, podUID, uniquePodName, uniqueVolumeName, type UniquePodName, type UniqueVolumeName } from '../../volume/types.ts';
import { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import { OpenReportEntries, type ReconstructionEntry, type ReconstructionOutcome, type ReconstructionReport } from './reconstruct-report.ts';

const node = nodeName('node');
const pods = ['pod-a', 'pod-b', 'pod-c'].map(uniquePodName);
const specNames = ['v0', 'v1', 'v2'];
const volumeOf = (spec: string): UniqueVolumeName => uniqueVolumeName(`fake-plugin/${spec}`);

function newAsw(): ActualStateOfWorld {
  return new ActualStateOfWorld({ nodeName: node, pluginMgr: new VolumePluginMgr([new FakeVolumePlugin()], null), seLinuxEnabled: false });
}

function entry(podName: UniquePodName, spec: string, outcome: 'reconstructed' | 'failed'): ReconstructionEntry {
  return {
    podName,
    volumeSpecName: spec,
    pluginName: pluginName('fake-plugin'),
    volumeMode: 'Filesystem',
    volumePath: `/pods/${podName}/volumes/fake-plugin/${spec}`,
    volumeName: outcome === 'reconstructed' ? volumeOf(spec) : null,
    outcome,
    error: outcome === 'failed' ? 'broken' : null,
    keptBecause: null,
    scannedAt: 0,
    resolvedAt: null,
  };
}

/** The rule of {@link OpenReportEntries}, applied to every open entry (the walk it replaces). */
function resolveByWalking(report: ReconstructionReport, asw: ActualStateOfWorld, record: OperationRecord | undefined, now: number): void {
  const resolve = (e: ReconstructionEntry, outcome: ReconstructionOutcome): void => {
    e.outcome = outcome;
    e.resolvedAt = now;
  };
  for (const e of report.entries) {
    if (e.resolvedAt !== null) continue;
    if (e.outcome === 'reconstructed' && e.volumeName !== null) {
      const state = asw.getVolumeMountState(e.volumeName, e.podName);
      if (state === 'VolumeMounted') resolve(e, 'confirmed-mounted');
      else if (state === 'VolumeNotMounted') resolve(e, 'cleaned-up');
    } else if (e.outcome === 'failed') {
      const cleaned = record?.outcome === 'success' && record.operationName === 'volume_unmount' && record.volume === e.volumeSpecName && record.pod === e.podName;
      const mounted = asw.getMountedVolumesForPod(e.podName).some((m) => m.innerVolumeSpecName === e.volumeSpecName);
      if (cleaned) resolve(e, 'cleaned-up');
      else if (mounted) resolve(e, 'confirmed-mounted');
    }
  }
}

/** One step of the model: a change of the actual state (announced with its volume) or a finished operation. */
type Step =
  | { kind: 'uncertain' | 'mounted' | 'unmounted'; pod: number; spec: number }
  | { kind: 'record'; pod: number; spec: number; success: boolean };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constantFrom('uncertain' as const, 'mounted' as const, 'unmounted' as const), pod: fc.nat(2), spec: fc.nat(2) }),
  fc.record({ kind: fc.constant('record' as const), pod: fc.nat(2), spec: fc.nat(2), success: fc.boolean() }),
);

describe('OpenReportEntries', () => {
  it('resolves, change by change, exactly the entries a walk of the whole report resolves', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ pod: fc.nat(2), spec: fc.nat(2), failed: fc.boolean() }), { minLength: 1, maxLength: 9 }),
        fc.array(stepArb, { minLength: 1, maxLength: 40 }),
        (entries, steps) => {
          const make = (): ReconstructionReport => ({
            state: 'done',
            startedAt: 0,
            finishedAt: 0,
            error: null,
            entries: entries.map((e) => entry(pods[e.pod] as UniquePodName, specNames[e.spec] as string, e.failed ? 'failed' : 'reconstructed')),
          });
          const indexed = make();
          const walked = make();
          const asw = newAsw();
          // The scan's state: every reconstructed entry is in the actual state, Uncertain.
          for (const e of indexed.entries) {
            if (e.volumeName === null) continue;
            asw.addAttachUncertainReconstructedVolume(e.volumeName, specFromVolume({ name: e.volumeSpecName }), node, '');
            asw.checkAndMarkVolumeAsUncertainViaReconstruction({
              podName: e.podName,
              podUID: podUID(e.podName),
              volumeName: e.volumeName,
              mounter: null,
              blockVolumeMapper: null,
              outerVolumeSpecName: e.volumeSpecName,
              volumeGidValue: '',
              volumeSpec: specFromVolume({ name: e.volumeSpecName }),
              volumeMountState: 'VolumeMountUncertain',
              seLinuxMountContext: '',
            });
          }
          const open = new OpenReportEntries(indexed);
          let now = 1;
          let resolvedCount = open.resolveAll(asw, now);
          resolveByWalking(walked, asw, undefined, now);
          const changed: UniqueVolumeName[] = [];
          const off = asw.onChange((v) => changed.push(v));
          for (const step of steps) {
            now++;
            const podName = pods[step.pod] as UniquePodName;
            const spec = specNames[step.spec] as string;
            const volumeName = volumeOf(spec);
            let record: OperationRecord | undefined;
            if (step.kind === 'record') {
              record = { operationName: 'volume_unmount', volume: spec, pod: podName, outcome: step.success ? 'success' : 'failure' } as OperationRecord;
            } else if (step.kind === 'unmounted') {
              if (asw.volumeExists(volumeName)) asw.markVolumeAsUnmounted(podName, volumeName);
            } else {
              if (!asw.volumeExists(volumeName)) asw.markVolumeAsAttached(volumeName, specFromVolume({ name: spec }), node, '');
              const opts = {
                podName,
                podUID: podUID(podName),
                volumeName,
                mounter: null,
                blockVolumeMapper: null,
                outerVolumeSpecName: spec,
                volumeGidValue: '',
                volumeSpec: specFromVolume({ name: spec }),
                seLinuxMountContext: '',
              };
              if (step.kind === 'mounted') asw.markVolumeAsMounted({ ...opts, volumeMountState: 'VolumeMounted' });
              else asw.markVolumeMountAsUncertain({ ...opts, volumeMountState: 'VolumeMountUncertain' });
            }
            // Each announced volume, then the record: as the volume manager hands them over.
            for (const v of changed.splice(0)) resolvedCount += open.resolveChange({ volumeName: v }, asw, now);
            if (record !== undefined) resolvedCount += open.resolveChange({ record }, asw, now);
            resolveByWalking(walked, asw, record, now);
            expect(indexed.entries).toEqual(walked.entries);
          }
          off();
          expect(resolvedCount).toBe(indexed.entries.filter((e) => e.resolvedAt !== null).length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves entries resolved before it was built alone and costs nothing once all are resolved', () => {
    const asw = newAsw();
    const done = { ...entry(pods[0] as UniquePodName, 'v0', 'reconstructed'), outcome: 'confirmed-mounted' as const, resolvedAt: 5 };
    const report: ReconstructionReport = { state: 'done', startedAt: 0, finishedAt: 0, error: null, entries: [done, entry(pods[1] as UniquePodName, 'v1', 'reconstructed')] };
    const open = new OpenReportEntries(report);
    // v1 is not in the actual state (never added, or torn down): cleaned up.
    expect(open.resolveAll(asw, 9)).toBe(1);
    expect(report.entries.map((e) => [e.outcome, e.resolvedAt])).toEqual([
      ['confirmed-mounted', 5],
      ['cleaned-up', 9],
    ]);
    expect(open.resolveChange({ volumeName: volumeOf('v1') }, asw, 10)).toBe(0);
    expect(open.resolveAll(asw, 11)).toBe(0);
  });
});
