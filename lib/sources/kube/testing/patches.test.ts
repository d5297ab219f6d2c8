import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../plain-json.ts';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, isPatchError } from './patches.ts';

describe('applyMergePatch', () => {
  it('merges objects, deletes on null and replaces lists', () => {
    const target = { status: { volumesInUse: ['a', 'b'], phase: 'Running', extra: 1 } };
    expect(applyMergePatch(target, { status: { volumesInUse: ['c'], extra: null } })).toEqual({ status: { volumesInUse: ['c'], phase: 'Running' } });
    expect(target.status.volumesInUse).toEqual(['a', 'b']);
  });
});

describe('applyStrategicMergePatch', () => {
  it('merges keyed lists by their key, deletes items on $patch: delete, and replaces other lists', () => {
    const target: JsonObject = {
      status: {
        conditions: [{ type: 'Ready', status: 'False', reason: 'x' }, { type: 'MemoryPressure', status: 'False' }],
        volumesAttached: [{ name: 'a', devicePath: '/dev/a' }],
      },
    };
    const patch: JsonObject = {
      status: {
        $setElementOrder: 'ignored',
        conditions: [{ type: 'Ready', status: 'True' }, { type: 'MemoryPressure', $patch: 'delete' }, { type: 'PIDPressure', status: 'False' }],
        volumesAttached: [{ name: 'b', devicePath: '/dev/b' }],
      },
    };
    expect(applyStrategicMergePatch(target, patch)).toEqual({
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'x' }, { type: 'PIDPressure', status: 'False' }],
        volumesAttached: [{ name: 'b', devicePath: '/dev/b' }],
      },
    });
  });

  it('replaces a map marked $patch: replace', () => {
    expect(applyStrategicMergePatch({ metadata: { labels: { a: '1', b: '2' } } }, { metadata: { labels: { $patch: 'replace', c: '3' } } })).toEqual({
      metadata: { labels: { c: '3' } },
    });
  });
});

describe('applyJsonPatch', () => {
  it('applies add, remove, replace, copy and move in order', () => {
    const result = applyJsonPatch({ status: { volumesInUse: ['a', 'b'] } }, [
      { op: 'add', path: '/status/volumesInUse/-', value: 'c' },
      { op: 'remove', path: '/status/volumesInUse/0' },
      { op: 'replace', path: '/status/volumesInUse/0', value: 'B' },
      { op: 'copy', from: '/status/volumesInUse', path: '/status/copy' },
      { op: 'move', from: '/status/copy', path: '/status/moved' },
      { op: 'test', path: '/status/moved/1', value: 'c' },
    ]);
    expect(result).toEqual({ status: { volumesInUse: ['B', 'c'], moved: ['B', 'c'] } });
  });

  it('fails a failed test and a missing path with 422, a malformed patch with 400', () => {
    const fail = (ops: unknown) => {
      try {
        applyJsonPatch({ a: 1 }, ops as never);
      } catch (err) {
        return isPatchError(err) ? err.status : 'other';
      }
      return 'applied';
    };
    expect(fail([{ op: 'test', path: '/a', value: 2 }])).toBe(422);
    expect(fail([{ op: 'replace', path: '/b', value: 2 }])).toBe(422);
    expect(fail({ op: 'add' })).toBe(400);
    expect(fail([{ op: 'frobnicate', path: '/a' }])).toBe(400);
  });
});
