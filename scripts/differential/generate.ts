/**
 * Random traces (fast-check): a few pods over a few disks, with plain and magic pod volume names
 * (the fake plugin's outcomes), per-call plugin outcomes (outcome steps), attach verifications,
 * removals, time advances and in-use reports. Steps that would add a pod twice or remove an absent one are dropped, so
 * every generated trace is valid.
 */
import fc from 'fast-check';
import { uniqueNameOf, type Step, type Trace } from './trace.ts';

const pods = ['p1', 'p2', 'p3'] as const;
const disks = ['d1', 'd2', 'd3'] as const;
/** Plain names and the fake plugin's magic names (lib/volume/testing/fake-volume-plugin.ts). */
export const volumeNames = [
  'vol',
  'fail-setup-volume',
  'timeout-setup-volume',
  'timeout-and-fail-setup-volume',
  'success-and-timeout-setup-volume-name',
  'success-and-failed-setup-device-name',
  'timeout-mount-device-volume',
  'fail-mount-device-volume-name',
  'timeout-and-fail-mount-device-name',
  'success-and-timeout-device-name',
  'success-and-failed-mount-device-name',
] as const;
/** Advances: within a backoff window, past the first ones, past the longest (2m2s). */
const advances = [200, 700, 1_500, 5_000, 130_000] as const;

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('addPod' as const),
      pod: fc.constantFrom(...pods),
      volumes: fc.uniqueArray(fc.record({ name: fc.constantFrom(...volumeNames), disk: fc.constantFrom(...disks) }), {
        minLength: 1,
        maxLength: 2,
        selector: (v) => v.disk,
      }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('removePod' as const), pod: fc.constantFrom(...pods) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.constantFrom(...advances) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('markInUse' as const), inUse: fc.subarray(disks.map(uniqueNameOf)) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('nodeStatus' as const), attached: fc.subarray([...disks]) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('restart' as const), removed: fc.subarray([...pods]) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'verifyAttachments' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('outcome' as const),
      disk: fc.constantFrom(...disks),
      call: fc.constantFrom('attach' as const, 'mountDevice' as const, 'setUp' as const, 'volumesAreAttached' as const),
      outcome: fc.constantFrom('success' as const, 'final' as const, 'uncertain' as const, 'hang' as const),
    }),
  },
);

/**
 * Drops the steps that are invalid where they stand: the add of a present pod, the remove of an
 * absent one, and the add of a pod naming a disk another present pod has. Upstream v1.34 panics
 * on an inline volume mounted for a second pod (operation_generator.go reads
 * `VolumeSpec.PersistentVolume.Spec.AccessModes` of a spec without a PV, docs/differential.md).
 */
export function validSteps(steps: readonly Step[]): Step[] {
  const present = new Map<string, string[]>();
  const out: Step[] = [];
  for (const s of steps) {
    if (s.op === 'addPod') {
      const held = new Set([...present.values()].flat());
      if (present.has(s.pod) || s.volumes.some((v) => held.has(v.disk))) continue;
      present.set(s.pod, s.volumes.map((v) => v.disk));
    } else if (s.op === 'removePod') {
      if (!present.delete(s.pod)) continue;
    } else if (s.op === 'restart') {
      const removed = (s.removed ?? []).filter((p) => present.delete(p));
      out.push(removed.length > 0 ? { op: 'restart', removed } : { op: 'restart' });
      continue;
    }
    out.push(s);
  }
  return out;
}

export const traceArb: fc.Arbitrary<Trace> = fc
  .record({ controllerAttach: fc.boolean(), steps: fc.array(stepArb, { minLength: 1, maxLength: 12 }) })
  .map(({ controllerAttach, steps }) => ({ ...(controllerAttach ? { controllerAttach } : {}), steps: validSteps(steps) }))
  .filter((t) => t.steps.length > 0);

export function generateTraces(count: number, seed: number): Trace[] {
  return fc.sample(traceArb, { numRuns: count, seed });
}
