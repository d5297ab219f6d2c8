import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CompactSnapshotEncoder, encodeCompactSnapshot, inferPodsDir, parseSnapshot, safeParseSnapshot, snapshotEncodingOf } from './compact-snapshot.ts';
import { ARB_PODS_DIR, kubeletSnapshotArb, snapshotArb } from './testing/snapshot-arbitraries.ts';
import { exampleSnapshot, largeSnapshot } from './testing/snapshot-fixtures.ts';

describe('compact snapshot encoding', () => {
  it('decode(encode(s)) deep-equals s for generated snapshots', () => {
    fc.assert(
      fc.property(fc.oneof(snapshotArb, kubeletSnapshotArb), (s) => {
        expect(parseSnapshot(JSON.parse(JSON.stringify(encodeCompactSnapshot(s))))).toStrictEqual(s);
        const encoder = new CompactSnapshotEncoder();
        expect(JSON.parse(encoder.encodeJson(s))).toStrictEqual(JSON.parse(JSON.stringify(encoder.encode(s))));
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips the example and a large snapshot, and is smaller than the full form', () => {
    for (const s of [exampleSnapshot(), largeSnapshot(500)]) {
      const compact = JSON.stringify(encodeCompactSnapshot(s));
      expect(parseSnapshot(JSON.parse(compact))).toStrictEqual(s);
      expect(compact.length).toBeLessThan(JSON.stringify(s).length);
    }
  });

  it('omits derivable values: pod paths relative to podsDir, per-pod unique names', () => {
    fc.assert(
      fc.property(kubeletSnapshotArb, (s) => {
        const compact = encodeCompactSnapshot(s);
        const podPaths = s.mountHealth.filter((h) => h.podUid !== null && h.path.startsWith(`${ARB_PODS_DIR}/${h.podUid}/`));
        if (podPaths.length > 0) expect(compact.podsDir).toBe(ARB_PODS_DIR);
        expect(JSON.stringify(compact.mountHealth)).not.toContain(`${ARB_PODS_DIR}/`);
      }),
      { numRuns: 200 },
    );
  });

  it('encodes an unchanged item once: the encoder reuses the encoding of the same object', () => {
    const encoder = new CompactSnapshotEncoder();
    const s = largeSnapshot(20);
    const [changed, ...others] = s.desired.pods;
    if (changed === undefined) throw new Error('largeSnapshot(20) has pods');
    const first = encoder.encode(s);
    const next = encoder.encode({ ...s, seq: s.seq + 1, desired: { pods: [...others, { ...changed, name: 'changed' }] } });
    expect(next.desired.pods[0]).toBe(first.desired.pods[1]);
    expect(next.actual.volumes[0]).toBe(first.actual.volumes[0]);
    expect(next.desired.pods.at(-1)?.n).toBe('changed');
  });

  it('rejects a compact snapshot that breaks its schema, or whose decoded form breaks the snapshot schema', () => {
    const compact = encodeCompactSnapshot(largeSnapshot(3));
    expect(safeParseSnapshot({ ...compact, actual: { volumes: [{ u: 1 }] } }).success).toBe(false);
    const [first] = compact.actual.volumes;
    expect(safeParseSnapshot({ ...compact, actual: { volumes: [first, first] } }).success).toBe(false);
    expect(safeParseSnapshot({ ...compact, encoding: 'compact/v1' }).success).toBe(false);
  });

  it('infers no pods directory from a snapshot without pod paths', () => {
    expect(inferPodsDir(largeSnapshot(0))).toBe('');
  });

  it('reads ?encoding=: compact by default, full on request, null for anything else', () => {
    expect(snapshotEncodingOf('/api/v1/snapshot')).toBe('compact');
    expect(snapshotEncodingOf('/api/v1/snapshot?encoding=full')).toBe('full');
    expect(snapshotEncodingOf('/api/v1/snapshot?encoding=compact')).toBe('compact');
    expect(snapshotEncodingOf('/api/v1/snapshot?encoding=gzip')).toBeNull();
    expect(snapshotEncodingOf('/api/v1/snapshot?encoding=')).toBeNull();
  });
});
