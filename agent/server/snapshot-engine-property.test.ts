/**
 * Property: whatever the engine does, the deltas the server publishes take a consumer from one
 * snapshot to the next. 1,000 random engine changes (desired pods and volumes, attach, mount
 * states, device states, reported-in-use, pod errors, remount flags) are applied one at a time;
 * after each, the delta between the server's previous and current snapshot is applied to the
 * consumer's state, which must equal both the served snapshot and one built from scratch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDelta, computeDelta } from '../../lib/api/delta.ts';
import { normalizeSnapshot } from '../../lib/api/normalize-snapshot.ts';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import type { DeviceMountState } from '../../lib/volumemanager/index.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import { specFromVolume, type Spec } from '../../lib/volume/spec.ts';
import { podUID, uniquePodName, uniqueVolumeName, type UniqueVolumeName } from '../../lib/volume/types.ts';
import { gcePdVolume, Harness } from '../../lib/volumemanager/testing/harness.ts';
import { SnapshotBuilder, type BuiltSnapshot } from './snapshot-builder.ts';
import { FakeAgentRuntime } from './testing/fake-agent-runtime.ts';

const PODS = 6;
const VOLUMES = 8;

type Change =
  | { kind: 'addPod'; pod: number; volume: number }
  | { kind: 'deletePod'; pod: number; volume: number }
  | { kind: 'attach'; volume: number }
  | { kind: 'mount'; pod: number; volume: number; uncertain: boolean }
  | { kind: 'unmount'; pod: number; volume: number }
  | { kind: 'device'; volume: number; state: DeviceMountState }
  | { kind: 'detach'; volume: number }
  | { kind: 'reportInUse'; volumes: number[] }
  | { kind: 'podError'; pod: number; message: number }
  | { kind: 'popErrors'; pod: number }
  | { kind: 'remount'; pod: number };

const pod = fc.integer({ min: 0, max: PODS - 1 });
const volume = fc.integer({ min: 0, max: VOLUMES - 1 });
const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant('addPod' as const), pod, volume }),
  fc.record({ kind: fc.constant('deletePod' as const), pod, volume }),
  fc.record({ kind: fc.constant('attach' as const), volume }),
  fc.record({ kind: fc.constant('mount' as const), pod, volume, uncertain: fc.boolean() }),
  fc.record({ kind: fc.constant('unmount' as const), pod, volume }),
  fc.record({
    kind: fc.constant('device' as const),
    volume,
    state: fc.constantFrom<DeviceMountState>('DeviceGloballyMounted', 'DeviceMountUncertain', 'DeviceNotMounted'),
  }),
  fc.record({ kind: fc.constant('detach' as const), volume }),
  fc.record({ kind: fc.constant('reportInUse' as const), volumes: fc.uniqueArray(volume, { maxLength: VOLUMES }) }),
  fc.record({ kind: fc.constant('podError' as const), pod, message: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('popErrors' as const), pod }),
  fc.record({ kind: fc.constant('remount' as const), pod }),
);

function makePod(i: number): Pod {
  const volumes = Array.from({ length: VOLUMES }, (_, v) => gcePdVolume(`vol-${v}`, `device-${v}`));
  return {
    metadata: { name: `pod-${i}`, namespace: `ns-${i % 2}`, uid: `uid-${i}` },
    spec: { volumes, containers: [{ name: 'c', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/m/${v.name}` })) }] },
  };
}

const spec = (v: number): Spec => specFromVolume(gcePdVolume(`vol-${v}`, `device-${v}`));
const name = (v: number): UniqueVolumeName => uniqueVolumeName(`fake-plugin/device-${v}`);

/** Applies one change to the engine's worlds; changes the engine refuses are simply no-ops. */
function apply(h: Harness, c: Change): void {
  const { dsw, asw } = h;
  try {
    switch (c.kind) {
      case 'addPod':
        dsw.addPodToVolume(uniquePodName(`uid-${c.pod}`), makePod(c.pod), spec(c.volume), `vol-${c.volume}`, '', []);
        break;
      case 'deletePod':
        dsw.deletePodFromVolume(uniquePodName(`uid-${c.pod}`), name(c.volume));
        break;
      case 'attach':
        asw.markVolumeAsAttached(name(c.volume), spec(c.volume), h.vm.nodeName, `/dev/vd${c.volume}`);
        break;
      case 'mount':
        asw.markVolumeAsMounted({
          podName: uniquePodName(`uid-${c.pod}`),
          podUID: podUID(`uid-${c.pod}`),
          volumeName: name(c.volume),
          mounter: null,
          blockVolumeMapper: null,
          outerVolumeSpecName: `vol-${c.volume}`,
          volumeGidValue: '',
          volumeSpec: spec(c.volume),
          volumeMountState: c.uncertain ? 'VolumeMountUncertain' : 'VolumeMounted',
          seLinuxMountContext: '',
        });
        break;
      case 'unmount':
        asw.markVolumeAsUnmounted(uniquePodName(`uid-${c.pod}`), name(c.volume));
        break;
      case 'device':
        asw.setDeviceMountState(name(c.volume), c.state, `/dev/vd${c.volume}`, `/global/${c.volume}`, '');
        break;
      case 'detach':
        asw.markVolumeAsDetached(name(c.volume), h.vm.nodeName);
        break;
      case 'reportInUse':
        dsw.markVolumesReportedInUse(c.volumes.map(name));
        break;
      case 'podError':
        dsw.addErrorToPod(uniquePodName(`uid-${c.pod}`), `error ${c.message}`);
        break;
      case 'popErrors':
        dsw.popPodErrors(uniquePodName(`uid-${c.pod}`));
        break;
      case 'remount':
        asw.markRemountRequired(uniquePodName(`uid-${c.pod}`));
        break;
    }
  } catch {
    // The engine refused the change (e.g. a volume that is not attached): nothing changed.
  }
}

describe('snapshot deltas over engine changes', () => {
  it('applying every published delta reproduces a fresh snapshot after each of 1,000 random engine changes', () => {
    fc.assert(
      fc.property(fc.array(change, { minLength: 1000, maxLength: 1000 }), (changes) => {
        const h = new Harness();
        const builder = new SnapshotBuilder(new FakeAgentRuntime(h), () => []);
        let published: BuiltSnapshot = builder.initial();
        let consumer: Snapshot = published.snapshot;
        let seq = 0;
        for (const c of changes) {
          apply(h, c);
          const next = builder.build(published, seq + 1);
          const delta = computeDelta(published.snapshot, next.snapshot);
          if (delta === null) continue;
          seq += 1;
          consumer = applyDelta(consumer, delta);
          published = next;
          // What GET /api/v1/snapshot serves now…
          expect(normalizeSnapshot(consumer)).toEqual(normalizeSnapshot(next.snapshot));
          // …and a snapshot built from scratch: a build depends on the engine only, never on what
          // an earlier build saw (a departed pod's namespace included).
          const fresh = builder.build(null, seq).snapshot;
          expect(normalizeSnapshot(consumer)).toEqual(normalizeSnapshot(fresh));
        }
        // The run must have exercised the engine, not only produced empty deltas.
        expect(seq).toBeGreaterThan(100);
      }),
      { numRuns: 3, seed: 20261129 },
    );
  }, 60_000);
});
