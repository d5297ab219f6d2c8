/**
 * The size rules of CreateVolume and ControllerExpandVolume (CSI `CapacityRange`): which size a
 * volume gets for a requested range, or why the range cannot be served.
 *
 * - `required_bytes` and `limit_bytes` are optional (0 = unset); a negative value, or a limit
 *   below the required size, is INVALID_ARGUMENT;
 * - sizes are allocated in 4 KiB units (the ext4 block size), rounded up, and at least 1 MiB
 *   (the smallest device mkfs.ext4 accepts with room to spare); a range with no such size in it
 *   is OUT_OF_RANGE;
 * - with neither field set the size is the caller's default (CreateVolume: 64Mi);
 * - a size above the maximum (the size of the filesystem that holds the disks) is OUT_OF_RANGE.
 */
import { Code, CsiError, invalidArgument } from './csi-error.ts';
import type { CapacityRange } from './csi-types.ts';

export const ALLOCATION_UNIT_BYTES = 4096;
export const MIN_VOLUME_BYTES = 2 ** 20;

export interface SizeLimits {
  /** The size when the range sets neither field (or only a limit above it). */
  defaultBytes: number;
  maximumBytes: number;
}

/** The size to allocate for `range`; throws INVALID_ARGUMENT or OUT_OF_RANGE as described above. */
export function allocationFor(range: CapacityRange | null, limits: SizeLimits): number {
  const required = range?.required_bytes ?? 0;
  const limit = range?.limit_bytes ?? 0;
  if (required < 0 || limit < 0) {
    throw invalidArgument(`capacity_range must not be negative (required_bytes=${required}, limit_bytes=${limit})`);
  }
  if (limit > 0 && required > limit) {
    throw invalidArgument(`capacity_range required_bytes=${required} exceeds limit_bytes=${limit}`);
  }
  const wanted = required > 0 ? required : limit > 0 ? Math.min(limits.defaultBytes, limit) : limits.defaultBytes;
  let bytes = roundUp(Math.max(wanted, MIN_VOLUME_BYTES));
  if (limit > 0 && bytes > limit) {
    // The largest allocatable size within the limit still serves the range if it is big enough.
    bytes = Math.floor(limit / ALLOCATION_UNIT_BYTES) * ALLOCATION_UNIT_BYTES;
    if (bytes < Math.max(required, MIN_VOLUME_BYTES)) {
      throw new CsiError(
        Code.OUT_OF_RANGE,
        `no size in ${ALLOCATION_UNIT_BYTES}-byte units of at least ${MIN_VOLUME_BYTES} bytes fits capacity_range required_bytes=${required} limit_bytes=${limit}`,
      );
    }
  }
  if (bytes > limits.maximumBytes || !Number.isSafeInteger(bytes)) {
    throw new CsiError(Code.OUT_OF_RANGE, `${bytes} bytes exceed the largest volume csi-loop can hold here (${limits.maximumBytes} bytes)`);
  }
  return bytes;
}

/** Whether a volume of `bytes` satisfies `range` (the compatibility test of a repeated CreateVolume). */
export function fitsRange(bytes: number, range: CapacityRange | null): boolean {
  const required = range?.required_bytes ?? 0;
  const limit = range?.limit_bytes ?? 0;
  return bytes >= required && (limit === 0 || bytes <= limit);
}

function roundUp(bytes: number): number {
  return Math.ceil(bytes / ALLOCATION_UNIT_BYTES) * ALLOCATION_UNIT_BYTES;
}
