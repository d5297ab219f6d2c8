/**
 * A CSI driver's attach limit against what the node uses of it: NodeGetInfo's
 * `max_volumes_per_node` (the CSINode's `allocatable.count`, what the scheduler counts against)
 * and the driver's volumes in the actual state. Pure.
 */
import type { ActualVolume, Driver } from '../api/index.ts';

/** The attach limit of one driver, as the drivers table shows it. */
export interface DriverLimit {
  /** Volumes of the driver in the actual state (attached or uncertain). */
  readonly inUse: number;
  /** The limit; 0 = no limit; null when the driver has not said (or the agent predates it). */
  readonly limit: number | null;
  /** `3 of 16 volumes`, `no limit (3 in use)`, `unknown (3 in use)`. */
  readonly text: string;
  /** At the limit: the next volume of this driver cannot be attached to this node. */
  readonly full: boolean;
}

/** `kubernetes.io/csi/<driver>^<handle>`: the prefix of a CSI driver's unique volume names. */
function csiPrefix(driver: string): string {
  return `kubernetes.io/csi/${driver}^`;
}

/** The attach limit of `driver` against `volumes` (the snapshot's `actual.volumes`). */
export function driverLimit(driver: Pick<Driver, 'name' | 'maxVolumesPerNode'>, volumes: readonly ActualVolume[]): DriverLimit {
  const prefix = csiPrefix(driver.name);
  const inUse = volumes.reduce((n, v) => n + (v.uniqueVolumeName.startsWith(prefix) ? 1 : 0), 0);
  const limit = driver.maxVolumesPerNode ?? null;
  if (limit === null) return { inUse, limit, text: `unknown (${inUse} in use)`, full: false };
  if (limit === 0) return { inUse, limit, text: `no limit (${inUse} in use)`, full: false };
  return { inUse, limit, text: `${inUse} of ${limit} volume${limit === 1 ? '' : 's'}`, full: inUse >= limit };
}
