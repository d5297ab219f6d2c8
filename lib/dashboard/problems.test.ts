import { describe, expect, it } from 'vitest';
import { emptySnapshot, exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { deriveVolumeRows } from './pipeline.ts';
import { nodeProblems } from './problems.ts';

describe('nodeProblems', () => {
  it('links to the first section with a problem, in page order, and lists every kind in its label', () => {
    const snapshot = exampleSnapshot();
    const problems = nodeProblems(snapshot, deriveVolumeRows(snapshot));
    expect(problems.href).toBe('#pods');
    expect(problems.label).toBe('Jump to problems: 1 volume failing or uncertain, 1 operation in backoff');
  });

  it('goes to a later section when the earlier ones are fine', () => {
    const snapshot = emptySnapshot({ sourceErrors: [{ file: '/etc/kubernetes/manifests/bad.yaml', message: 'yaml: line 3' }], attachVerification: { lastRunAt: 1, checked: 2, foundDetached: ['v'] } });
    const problems = nodeProblems(snapshot, []);
    expect(problems.href).toBe('#source-errors');
    expect(problems.groups.map((g) => g.href)).toEqual(['#source-errors', '#drivers']);
  });

  it('counts unhealthy mounts, between the pods and the operations', () => {
    const hung = { path: '/r/p', podUid: 'u', volume: 'v', kind: 'pod' as const, state: 'hung' as const, error: 'no answer', checkedAt: 1, since: 1 };
    const snapshot = emptySnapshot({ mountHealth: [hung, { ...hung, path: '/r/q', state: 'healthy', error: null }] });
    const problems = nodeProblems(snapshot, []);
    expect(problems.href).toBe('#mount-health');
    expect(problems.label).toBe('Jump to problems: 1 unhealthy mount');
  });

  it('says "No problems" without a link on a healthy node', () => {
    const snapshot = emptySnapshot();
    expect(nodeProblems(snapshot, deriveVolumeRows(snapshot))).toEqual({ groups: [], href: null, label: 'No problems' });
  });
});
