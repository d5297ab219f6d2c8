/**
 * The canonical order of a snapshot: every keyed collection sorted by its key (code-unit order,
 * not locale order), `podErrors` keys sorted. Two snapshots that describe the same state are
 * deep-equal once normalized; `computeDelta` and `applyDelta` only produce normalized values.
 */
import {
  actualVolumeKey,
  desiredPodKey,
  desiredVolumeKey,
  driverKey,
  operationKey,
  podMountKey,
  reconstructedVolumeKey,
  sourceErrorKey,
  type ActualVolume,
  type DesiredPod,
  type PodErrors,
  type Snapshot,
} from './snapshot.ts';
import { mountHealthKey, unmountBlockersKey } from './mount-health.ts';

/** Orders keys by UTF-16 code units, the same in every locale. */
export function compareKeys(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}

/** `items` sorted by key; the same array when it already is (so unchanged parts keep identity). */
export function sortByKey<T>(items: T[], key: (item: T) => string): T[] {
  for (let i = 1; i < items.length; i++) {
    if (compareKeys(key(items[i - 1] as T), key(items[i] as T)) > 0) {
      return [...items].sort((a, b) => compareKeys(key(a), key(b)));
    }
  }
  return items;
}

/** `items.map(fn)`, or `items` itself when `fn` returned every element unchanged. */
function mapSame<T>(items: T[], fn: (item: T) => T): T[] {
  let out: T[] | null = null;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as T;
    const mapped = fn(item);
    if (out === null && mapped !== item) out = items.slice(0, i);
    if (out !== null) out.push(mapped);
  }
  return out ?? items;
}

/** A desired pod with its volumes in key order; the same object when they already are. */
export function normalizeDesiredPod(pod: DesiredPod): DesiredPod {
  const volumes = sortByKey(pod.volumes, desiredVolumeKey);
  return volumes === pod.volumes ? pod : { ...pod, volumes };
}

/** An actual volume with its pod mounts in key order; the same object when they already are. */
export function normalizeActualVolume(volume: ActualVolume): ActualVolume {
  const pods = sortByKey(volume.pods, podMountKey);
  return pods === volume.pods ? volume : { ...volume, pods };
}

/** `podErrors` with its keys in code-unit order; the same object when they already are. */
export function normalizePodErrors(podErrors: PodErrors): PodErrors {
  const keys = Object.keys(podErrors);
  const sorted = [...keys].sort(compareKeys);
  if (sorted.every((k, i) => k === keys[i])) return podErrors;
  return Object.fromEntries(sorted.map((k) => [k, podErrors[k] ?? []]));
}

/**
 * Snapshots known to be normalized: every result of {@link normalizeSnapshot} (and of
 * `applyDelta`, which marks its results). Snapshots are never mutated, so a snapshot that was
 * normalized stays so; `applyDelta` uses this to touch only what a delta changes instead of
 * checking the order of every pod and volume again.
 */
const normalizedSnapshots = new WeakSet<Snapshot>();

/** Records that `snapshot` is normalized (its producer guarantees it); returns it. */
export function markNormalized(snapshot: Snapshot): Snapshot {
  normalizedSnapshots.add(snapshot);
  return snapshot;
}

/** True when `snapshot` came out of {@link normalizeSnapshot} or `applyDelta` (see {@link markNormalized}). */
export function isKnownNormalized(snapshot: Snapshot): boolean {
  return normalizedSnapshots.has(snapshot);
}

/**
 * The snapshot with every keyed collection (desired pods and their volumes, actual volumes and
 * their pods, operations, operation history, reconstruction volumes, source errors, drivers) sorted by key and
 * `podErrors` keys sorted. Ring buffers (`recentEvents`, `audit`) and string lists keep their
 * order. Pure: returns `snapshot` itself when it is already normalized, and reuses every part
 * that already is.
 */
export function normalizeSnapshot(snapshot: Snapshot): Snapshot {
  if (normalizedSnapshots.has(snapshot)) return snapshot;
  return markNormalized(normalizeUnknown(snapshot));
}

function normalizeUnknown(snapshot: Snapshot): Snapshot {
  const pods = sortByKey(mapSame(snapshot.desired.pods, normalizeDesiredPod), desiredPodKey);
  const volumes = sortByKey(mapSame(snapshot.actual.volumes, normalizeActualVolume), actualVolumeKey);
  const operations = sortByKey(snapshot.operations, operationKey);
  const operationHistory = sortByKey(snapshot.operationHistory, operationKey);
  const reconstructed = sortByKey(snapshot.reconstruction.volumes, reconstructedVolumeKey);
  const podErrors = normalizePodErrors(snapshot.podErrors);
  const sourceErrors = sortByKey(snapshot.sourceErrors, sourceErrorKey);
  const drivers = sortByKey(snapshot.drivers, driverKey);
  const mountHealth = sortByKey(snapshot.mountHealth, mountHealthKey);
  const unmountBlockers = sortByKey(snapshot.unmountBlockers, unmountBlockersKey);
  if (
    pods === snapshot.desired.pods &&
    volumes === snapshot.actual.volumes &&
    operations === snapshot.operations &&
    operationHistory === snapshot.operationHistory &&
    reconstructed === snapshot.reconstruction.volumes &&
    podErrors === snapshot.podErrors &&
    sourceErrors === snapshot.sourceErrors &&
    drivers === snapshot.drivers &&
    mountHealth === snapshot.mountHealth &&
    unmountBlockers === snapshot.unmountBlockers
  ) {
    return snapshot;
  }
  return {
    ...snapshot,
    desired: pods === snapshot.desired.pods ? snapshot.desired : { ...snapshot.desired, pods },
    actual: volumes === snapshot.actual.volumes ? snapshot.actual : { ...snapshot.actual, volumes },
    operations,
    operationHistory,
    reconstruction:
      reconstructed === snapshot.reconstruction.volumes
        ? snapshot.reconstruction
        : { ...snapshot.reconstruction, volumes: reconstructed },
    podErrors,
    sourceErrors,
    drivers,
    mountHealth,
    unmountBlockers,
  };
}
