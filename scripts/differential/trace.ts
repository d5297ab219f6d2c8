/**
 * The differential-test trace format and the observable state both sides emit after every step
 * (docs/differential.md). The Go oracle (upstream/kube/differential) defines the same shapes.
 */
import type { FakeCallCounts } from '../../lib/volume/testing/fake-volume-plugin.ts';

/** A pod volume: an inline GCE PD served by the fake plugin `fake-plugin-<disk>`. */
export interface VolumeRef {
  /** The pod volume name: `spec.Name()`, where the fake plugin's magic names act. */
  name: string;
  /** The PD name; the unique volume name is `fake-plugin-<disk>/<disk>`. */
  disk: string;
}

export type Step =
  | { op: 'addPod'; pod: string; volumes: VolumeRef[] }
  | { op: 'removePod'; pod: string }
  | { op: 'advance'; ms: number }
  | { op: 'markInUse'; inUse: string[] }
  /** node.status.volumesAttached lists these disks from now on. */
  | { op: 'nodeStatus'; attached: string[] }
  /**
   * The kubelet restarts: new worlds and reconciler over the pods dir the previous run left;
   * `removed` pods were deleted while it was down.
   */
  | { op: 'restart'; removed?: string[] }
  /**
   * The plugin outcome of the next `call` on `disk`'s plugin: passed through, a final error, an
   * uncertain progress error, or a call that blocks until the kubelet stops or the trace ends.
   */
  /** One attach verification (VerifyVolumesAreAttached over the actual state's volumes). */
  | { op: 'verifyAttachments' }
  | { op: 'outcome'; disk: string; call: 'attach' | 'mountDevice' | 'setUp' | 'volumesAreAttached'; outcome: 'success' | 'final' | 'uncertain' | 'hang' };

export interface Trace {
  name?: string;
  /** The attach/detach controller attaches (controllerAttachDetachEnabled). */
  controllerAttach?: boolean;
  steps: Step[];
}

export interface VolumeState {
  volume: string;
  attachable: boolean;
  device: string;
  /** Pod name → VolumeMounted | VolumeMountUncertain. */
  pods: Record<string, string>;
}

export interface DesiredPair {
  volume: string;
  pod: string;
  reportedInUse: boolean;
}

export interface OperationState {
  volume: string;
  pod: string;
  name: string;
  pending: boolean;
  /** As Go prints a time.Duration: `0s`, `500ms`, `1s`, `2m2s`. */
  durationBeforeRetry: string;
  lastError: string;
}

/** The fake plugins' call counts the oracle reads (upstream's FakeVolume counters), summed. */
export type Counts = Pick<FakeCallCounts, 'attach' | 'waitForAttach' | 'mountDevice' | 'setUp' | 'tearDown' | 'unmountDevice' | 'detach'>;

export interface ObservedState {
  step: number;
  volumes: VolumeState[];
  desired: DesiredPair[];
  operations: OperationState[];
  counts: Counts;
}

/** The unique volume name of a disk, as both sides name it. */
export function uniqueNameOf(disk: string): string {
  return `fake-plugin-${disk}/${disk}`;
}

/** The disks a trace names, sorted (one fake plugin each, on both sides). */
export function disksOf(trace: Trace): string[] {
  const disks = new Set<string>();
  for (const s of trace.steps) if (s.op === 'addPod') for (const v of s.volumes) disks.add(v.disk);
  return [...disks].sort();
}

/** Reconciler period and per-step settle time, the same on both sides (docs/differential.md). */
export const loopSleepMs = 100;
export const settleMs = 300;
/** Steps happen this long after a pass (both sides' passes run at multiples of the period). */
export const phaseMs = 50;

const byKeys = <T>(...keys: ((x: T) => string)[]) => (a: T, b: T): number => {
  for (const k of keys) {
    const ka = k(a);
    const kb = k(b);
    if (ka !== kb) return ka < kb ? -1 : 1;
  }
  return 0;
};

export const volumeOrder = byKeys<VolumeState>((v) => v.volume);
export const desiredOrder = byKeys<DesiredPair>((d) => d.volume, (d) => d.pod);
/** The oracle's order of the operations table: every field, a full tie-break (false before true). */
export const operationOrder = byKeys<OperationState>(
  (o) => o.volume,
  (o) => o.pod,
  (o) => o.name,
  (o) => String(o.pending),
  (o) => o.durationBeforeRetry,
  (o) => o.lastError,
);
