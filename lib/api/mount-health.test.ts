/** The plain-words verdict of a blocker report and the words for a holder. */
import { describe, expect, it } from 'vitest';
import { blockersVerdict, describeHolder, type BlockersReport, type Holder } from './mount-health.ts';

const report = (holders: Holder[], extra: Partial<BlockersReport> = {}): BlockersReport => ({
  path: '/var/lib/kubelet/pods/u/volumes/x/data',
  holders,
  truncated: false,
  incomplete: null,
  processesScanned: 10,
  checkedAt: 1,
  durationMs: 3,
  ...extra,
});

const inContainer: Holder = {
  pid: 4242,
  command: 'tail -f /data/app.log',
  kind: 'fd',
  path: '/data/app.log',
  container: { podUid: '9e1f7a44-2b6c-4d0e-8c3a-5f7b1d2e9a60', containerId: '3f9c2a7b1e0d'.padEnd(64, '0'), runtime: 'containerd' },
};

describe('blockers verdict', () => {
  it('names the first holder, its container and pod, and counts the other processes', () => {
    const other: Holder = { pid: 7, command: 'bash', kind: 'cwd', path: '/x', container: null };
    expect(blockersVerdict(report([inContainer, other]))).toBe(
      '2 process(es) keep /var/lib/kubelet/pods/u/volumes/x/data busy. pid 4242 (tail -f /data/app.log) in container 3f9c2a7b1e0d of pod 9e1f7a44-2b6c-4d0e-8c3a-5f7b1d2e9a60 has a file open in it. 1 more process(es) hold it too. The unmount can succeed once they exit or let go of it (stop the container, or end the process).',
    );
  });

  it('says when nothing holds it, and when the search is incomplete', () => {
    expect(blockersVerdict(report([]))).toMatch(/^No process holds .*An unmount should succeed now/);
    expect(blockersVerdict(report([], { incomplete: 'pid 9 did not answer within 1000 ms' }))).toMatch(/The search is incomplete: pid 9 did not answer within 1000 ms$/);
  });

  it('a host process and a namespace holder', () => {
    expect(describeHolder({ pid: 1, command: 'init', kind: 'mount-namespace', path: '/p', container: null })).toBe('pid 1 (init) on the host');
    expect(blockersVerdict(report([{ pid: 1, command: 'init', kind: 'mount-namespace', path: '/p', container: null }]))).toContain('still has it mounted in its mount namespace');
  });
});
