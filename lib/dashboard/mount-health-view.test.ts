/** The mount health rows of a node, pod and volume: the pods each state affects, unhealthy first. */
import { describe, expect, it } from 'vitest';
import type { MountHealth, Snapshot } from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { fetchBlockers, nodeMountHealth, podMountHealth, unhealthyMounts, volumeMountHealth } from './mount-health-view.ts';

const CSI_DATA = 'kubernetes.io/csi/csi-loop.volumescope.dev^vol-data';

function withHealth(entries: MountHealth[]): Snapshot {
  return { ...exampleSnapshot(), mountHealth: entries };
}

const base = { volume: CSI_DATA, error: null, checkedAt: 2, since: 1 };

describe('mount health rows', () => {
  const snapshot = exampleSnapshot();
  const podUid = snapshot.actual.volumes.find((v) => v.uniqueVolumeName === CSI_DATA)?.pods[0]?.podUid ?? '';
  const staging: MountHealth = { ...base, path: '/var/lib/kubelet/plugins/kubernetes.io/csi/d/x/globalmount', podUid: null, kind: 'staging', state: 'hung', error: 'no answer' };
  const podPath: MountHealth = { ...base, path: '/var/lib/kubelet/pods/a/volumes/kubernetes.io~csi/pv-data/mount', podUid, kind: 'pod', state: 'healthy' };
  const other: MountHealth = { ...base, path: '/var/lib/kubelet/pods/z/volumes/x/y', podUid: 'uid-z', volume: 'other', kind: 'pod', state: 'not-connected' };

  it('a staging path affects every pod of its volume; unhealthy rows come first', () => {
    const rows = nodeMountHealth(withHealth([podPath, other, staging]));
    expect(rows.map((r) => [r.entry.state, r.affectedPods])).toEqual([
      ['hung', [podUid]],
      ['not-connected', ['uid-z']],
      ['healthy', [podUid]],
    ]);
    expect(unhealthyMounts(withHealth([podPath, other, staging])).map((r) => r.entry.path)).toEqual([staging.path, other.path]);
  });

  it('a pod sees its paths and the staging paths of its volumes; a volume its own paths', () => {
    const s = withHealth([podPath, other, staging]);
    expect(podMountHealth(s, podUid).map((r) => r.entry.path)).toEqual([staging.path, podPath.path]);
    expect(volumeMountHealth(s, 'other').map((r) => r.entry.path)).toEqual([other.path]);
    expect(podUid).not.toBe('');
  });
});

describe('fetchBlockers', () => {
  it('asks the dashboard route with volume and podUid, and parses the answer', async () => {
    const urls: string[] = [];
    const answer = { volume: 'v', podUid: 'u', path: '/p', holders: [], truncated: false, incomplete: null, processesScanned: 3, checkedAt: 1, durationMs: 2 };
    const report = await fetchBlockers('node a', 'kubernetes.io/csi/d^v', 'u', (input) => {
      urls.push(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      return Promise.resolve(Response.json(answer));
    });
    expect(urls).toEqual(['/api/agents/node%20a/volumes/blockers?volume=kubernetes.io%2Fcsi%2Fd%5Ev&podUid=u']);
    expect(report).toEqual(answer);
  });

  it('turns an agent refusal into an error with its message', async () => {
    const failing = fetchBlockers('n', 'v', null, () => Promise.resolve(Response.json({ error: { code: 'not-found', message: 'volume "v" is not in the actual state' } }, { status: 404 })));
    await expect(failing).rejects.toThrow('volume "v" is not in the actual state');
  });
});
