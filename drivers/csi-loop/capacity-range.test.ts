import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { allocationFor, fitsRange } from './capacity-range.ts';
import { isCsiError } from './csi-error.ts';

const MiB = 2 ** 20;
const LIMITS = { defaultBytes: 64 * MiB, maximumBytes: 1024 * MiB };

function codeOf(act: () => unknown): number | undefined {
  try {
    act();
  } catch (err) {
    if (isCsiError(err)) return err.code;
    throw err;
  }
  return undefined;
}

describe('allocationFor', () => {
  it.each([
    { title: 'no range: the default', range: null, bytes: 64 * MiB },
    { title: 'required only: rounded up to 4 KiB', range: { required_bytes: 10 * MiB + 1, limit_bytes: 0 }, bytes: 10 * MiB + 4096 },
    { title: 'required below the 1 MiB minimum', range: { required_bytes: 100, limit_bytes: 0 }, bytes: MiB },
    { title: 'a limit below the default', range: { required_bytes: 0, limit_bytes: 8 * MiB }, bytes: 8 * MiB },
    { title: 'a limit that is no multiple of 4 KiB: rounded down', range: { required_bytes: 0, limit_bytes: 8 * MiB + 100 }, bytes: 8 * MiB },
    { title: 'required and limit equal', range: { required_bytes: 10 * MiB, limit_bytes: 10 * MiB }, bytes: 10 * MiB },
    { title: 'rounding up would pass the limit: the largest size within it', range: { required_bytes: 10 * MiB + 1, limit_bytes: 10 * MiB + 4000 }, bytes: null },
  ])('$title', ({ range, bytes }) => {
    if (bytes === null) {
      expect(codeOf(() => allocationFor(range, LIMITS))).toBe(status.OUT_OF_RANGE);
    } else {
      expect(allocationFor(range, LIMITS)).toBe(bytes);
    }
  });

  it.each([
    { title: 'a negative required size', range: { required_bytes: -1, limit_bytes: 0 }, code: status.INVALID_ARGUMENT },
    { title: 'required above limit', range: { required_bytes: 2 * MiB, limit_bytes: MiB }, code: status.INVALID_ARGUMENT },
    { title: 'a limit below the minimum', range: { required_bytes: 0, limit_bytes: MiB - 1 }, code: status.OUT_OF_RANGE },
    { title: 'more than the maximum', range: { required_bytes: 1024 * MiB + 1, limit_bytes: 0 }, code: status.OUT_OF_RANGE },
  ])('refuses $title', ({ range, code }) => {
    expect(codeOf(() => allocationFor(range, LIMITS))).toBe(code);
  });
});

describe('fitsRange', () => {
  it('accepts a size within [required, limit] and refuses one outside', () => {
    expect(fitsRange(10 * MiB, { required_bytes: 10 * MiB, limit_bytes: 0 })).toBe(true);
    expect(fitsRange(10 * MiB, null)).toBe(true);
    expect(fitsRange(10 * MiB, { required_bytes: 11 * MiB, limit_bytes: 0 })).toBe(false);
    expect(fitsRange(10 * MiB, { required_bytes: 0, limit_bytes: 9 * MiB })).toBe(false);
  });
});
