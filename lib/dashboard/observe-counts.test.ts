import { describe, expect, it } from 'vitest';
import { outstandingWork, summarizeSnapshot } from '../api/summary.ts';
import { observedSection, observedSnapshot, scratchPlanned } from '../api/testing/observe-fixtures.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { summarizeNode } from './node-summary.ts';
import { nodeSectionLinks } from './observe-view.ts';
import { toNodeSummary } from './summary.ts';

describe('one count of outstanding work, one wording of health', () => {
  it('the cards, the node page’s counts, its table of contents and the plan header show the same number', () => {
    // Arrange: three planned operations, one failing in the kubelet.
    const snapshot = observedSnapshot();

    // Act
    const fromSnapshot = summarizeNode(snapshot);
    const fromSummary = toNodeSummary(summarizeSnapshot(snapshot));
    const links = nodeSectionLinks(snapshot);

    // Assert
    expect(outstandingWork(observedSection())).toBe(3);
    expect(fromSnapshot.observe).toEqual({ orphans: 2, attachErrors: 0, outstanding: 3, failing: 1 });
    expect(fromSummary.observe).toEqual(fromSnapshot.observe);
    expect(links.map((l) => l.href)).toEqual(['#observe-plan', '#observe-orphans', '#observe-truth']);
    expect(links[0]?.label).toBe('Kubelet’s outstanding work (3)');
  });

  it('volumes uncertain only because the agent rebuilt them from disk do not make an observe-mode node degraded; the kubelet’s failures do', () => {
    // Four pod mounts are uncertain (rebuilt from the kubelet's root dir); nothing fails.
    const quiet = observedSnapshot({ plan: observedSection().plan.map((p) => ({ ...p, kubeletBackoff: null })) });
    expect(summarizeNode(quiet).uncertain).toBe(4);
    expect(summarizeNode(quiet)).toMatchObject({ health: 'healthy', reasons: [] });
    expect(toNodeSummary(summarizeSnapshot(quiet))).toMatchObject({ health: 'healthy', reasons: [] });

    const failing = observedSnapshot({ plan: [scratchPlanned()] });
    expect(summarizeNode(failing)).toMatchObject({ health: 'degraded', reasons: ['1 failing in the kubelet'] });
    expect(toNodeSummary(summarizeSnapshot(failing)).reasons).toEqual(['1 failing in the kubelet']);

    // Managed mode still counts an uncertain state as a reason.
    expect(summarizeNode(exampleSnapshot()).reasons).toContain('1 uncertain');
  });

  it('links a managed-mode page to the agent’s own operation sections', () => {
    const snapshot = exampleSnapshot();
    expect(nodeSectionLinks(snapshot).map((l) => l.href)).toEqual(['#operations', '#operation-history']);
  });
});
