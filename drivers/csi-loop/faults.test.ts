import { describe, expect, it } from 'vitest';
import { FaultRegistry, isInvalidFaultError, toFault, type FaultSpec } from './faults.ts';

describe('toFault', () => {
  it.each<[FaultSpec, { code: number; codeName: string }]>([
    [{ code: 'NOT_FOUND' }, { code: 5, codeName: 'NOT_FOUND' }],
    [{ code: 'deadline_exceeded' }, { code: 4, codeName: 'DEADLINE_EXCEEDED' }],
    [{ code: 9 }, { code: 9, codeName: 'FAILED_PRECONDITION' }],
    [{ code: '14' }, { code: 14, codeName: 'UNAVAILABLE' }],
    [{ delayMs: 10 }, { code: 0, codeName: 'OK' }],
    [{ hang: true }, { code: 0, codeName: 'OK' }],
  ])('accepts %j', (spec, expected) => {
    expect(toFault(spec)).toMatchObject(expected);
  });

  it.each<FaultSpec>([{}, { code: 'OK' }, { code: 'BOGUS' }, { code: 17 }, { code: -1 }])('rejects %j', (spec) => {
    let caught: unknown;
    try {
      toFault(spec);
    } catch (err) {
      caught = err;
    }
    expect(isInvalidFaultError(caught)).toBe(true);
  });
});

describe('FaultRegistry', () => {
  it('applies a failNext fault to exactly the next N calls', () => {
    const registry = new FaultRegistry();
    registry.set('NodeStageVolume', toFault({ code: 'INTERNAL', failNext: 2 }));
    expect(registry.take('NodeStageVolume')?.code).toBe(13);
    expect(registry.take('NodePublishVolume')).toBeUndefined();
    expect(registry.take('NodeStageVolume')?.code).toBe(13);
    expect(registry.take('NodeStageVolume')).toBeUndefined();
    expect(registry.list()).toEqual({});
  });

  it('keeps a fault without failNext until it is cleared', () => {
    const registry = new FaultRegistry();
    registry.set('Probe', toFault({ code: 'UNAVAILABLE' }));
    registry.set('NodeGetInfo', toFault({ delayMs: 5 }));
    for (let i = 0; i < 3; i += 1) {
      expect(registry.take('Probe')?.code).toBe(14);
    }
    registry.clear('Probe');
    expect(registry.take('Probe')).toBeUndefined();
    expect(Object.keys(registry.list())).toEqual(['NodeGetInfo']);
    registry.clear();
    expect(registry.list()).toEqual({});
  });
});
