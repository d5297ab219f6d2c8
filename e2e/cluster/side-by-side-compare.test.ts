import { describe, expect, it } from 'vitest';
import { RUN_NAMES, agentBackoff, differences, explain, goDuration, kubeletBackoff, normaliser, renderTable, type Deliberate } from './side-by-side-compare.ts';

describe('side-by-side comparison (pure)', () => {
  it('differences are per section and count duplicates (multiset)', () => {
    expect(differences({ a: ['x', 'x', 'y'], b: ['k'] }, { a: ['x', 'z'], c: ['c'] })).toEqual([
      { section: 'a', side: 'kubelet', line: 'x' },
      { section: 'a', side: 'kubelet', line: 'y' },
      { section: 'a', side: 'agent', line: 'z' },
      { section: 'b', side: 'kubelet', line: 'k' },
      { section: 'c', side: 'agent', line: 'c' },
    ]);
    expect(differences({ a: ['1', '2'] }, { a: ['2', '1'] })).toEqual([]);
  });

  it('explain: a deliberate entry matches whole lines of its section and side only; unmatched entries are reported unless optional', () => {
    const deliberate: Deliberate[] = [
      { section: 'a', side: 'kubelet', line: /x/, reason: 'x is the kubelet’s' },
      { section: 'a', side: 'agent', line: /never/, reason: 'stale' },
      { section: 'a', side: 'agent', line: /late/, reason: 'timing', optional: true },
    ];
    const diffs = differences({ a: ['x', 'xx'] }, { a: ['x2'] });
    const result = explain(diffs, deliberate);
    expect(result.matched[0]).toEqual([{ section: 'a', side: 'kubelet', line: 'x' }]);
    expect(result.unexplained).toEqual([
      { section: 'a', side: 'kubelet', line: 'xx' },
      { section: 'a', side: 'agent', line: 'x2' },
    ]);
    expect(result.unused.map((d) => d.reason)).toEqual(['stale']);
  });

  it('normaliser: literals longest first, then the run-specific names', () => {
    const n = normaliser([['/s', '<state>'], ['/s/nodes/kubelet-0', '<root>'], ['kubelet-0', '<node>'], ...RUN_NAMES]);
    expect(n('/s/nodes/kubelet-0/pods/x/volumes/kubernetes.io~projected/kube-api-access-ab1c9/..2026_12_02_01_28_25.1234567 on kubelet-0 /dev/loop12')).toBe(
      '<root>/pods/x/volumes/kubernetes.io~projected/kube-api-access-<x>/..<ts> on <node> /dev/loop<n>',
    );
    expect(n('..2026_12_02_01_28_25.HV2Jg1')).toBe('..<ts>');
    expect(n(`csi-${'a'.repeat(64)} ${'b'.repeat(64)}`)).toBe('csi-<hash> <sha256>');
  });

  it("reads the kubelet's back-off windows of one volume from its log", () => {
    const key = 'kubernetes.io/host-path/u1-gone';
    const line = (d: string, v = key): string =>
      `E1202 01:28:26.1 nestedpendingoperations.go:348] Operation for "{volumeName:${v} podName:u1 nodeName:}" failed. No retries permitted until 2026-12-02 01:28:26.6 +0000 UTC m=+1.0 (durationBeforeRetry ${d}). Error: MountVolume.SetUp failed`;
    expect(kubeletBackoff([line('500ms'), line('1s', 'kubernetes.io/host-path/u1-gone2'), line('1s'), line('2m2s'), 'other'].join('\n'), key)).toEqual([500, 1000, 122_000]);
    expect([500, 1000, 16_000, 64_000, 122_000].map(goDuration)).toEqual(['500ms', '1s', '16s', '1m4s', '2m2s']);
  });

  it("the agent's windows from its attempts: the wait after each failed attempt, rounded down to the ladder step", () => {
    expect(
      agentBackoff([
        { startedAt: 0, durationMs: 10 },
        { startedAt: 560, durationMs: 5 },
        { startedAt: 1600, durationMs: 5 },
        { startedAt: 3700, durationMs: 5 },
      ]),
    ).toEqual([500, 1000, 2000]);
    expect(agentBackoff([{ startedAt: 0, durationMs: 0 }, { startedAt: 100, durationMs: 0 }])).toEqual([100]);
    expect(agentBackoff([])).toEqual([]);
  });

  it('renders the table: common lines once, differences with their reason or as not explained', () => {
    const table = renderTable({ s: ['same', 'k|only'] }, { s: ['same', 'a only'] }, [{ section: 's', side: 'kubelet', line: /k\|only/, reason: 'why' }]);
    expect(table.split('\n').slice(2)).toEqual(['| s | `same` | yes | yes | |', '| s | `a only` | — | yes | **not explained** |', '| s | `k\\|only` | yes | — | why |']);
  });
});
