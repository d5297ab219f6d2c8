import { describe, expect, it } from 'vitest';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { driverLimit } from './driver-limits.ts';

const volumes = exampleSnapshot().actual.volumes;
const driver = 'csi-loop.volumescope.dev';
const inUse = volumes.filter((v) => v.uniqueVolumeName.startsWith(`kubernetes.io/csi/${driver}^`)).length;

describe('driverLimit', () => {
  it('counts the driver’s volumes of the actual state against its max_volumes_per_node', () => {
    expect(inUse).toBeGreaterThan(0);
    expect(driverLimit({ name: driver, maxVolumesPerNode: 16 }, volumes)).toEqual({ inUse, limit: 16, text: `${inUse} of 16 volumes`, full: false });
  });

  it('is full at the limit', () => {
    expect(driverLimit({ name: driver, maxVolumesPerNode: inUse }, volumes).full).toBe(true);
  });

  it('says no limit for 0 and unknown when the driver has not said', () => {
    expect(driverLimit({ name: driver, maxVolumesPerNode: 0 }, volumes).text).toBe(`no limit (${inUse} in use)`);
    expect(driverLimit({ name: driver, maxVolumesPerNode: null }, volumes).text).toBe(`unknown (${inUse} in use)`);
    expect(driverLimit({ name: driver }, volumes).limit).toBeNull();
    expect(driverLimit({ name: 'other.example.com', maxVolumesPerNode: 4 }, volumes).text).toBe('0 of 4 volumes');
  });
});
