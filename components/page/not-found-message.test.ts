import { describe, expect, it } from 'vitest';
import { describeNotFound } from './not-found-message.tsx';

describe('not-found pages', () => {
  it.each([
    { path: '/nodes/nope', level: 'node', title: 'Node not found', node: null },
    { path: '/nodes/nope/pods/x', level: 'node', title: 'Node not found', node: null },
    { path: '/nodes/node-a/pods/x', level: 'item', title: 'Pod not found', node: 'node-a' },
    { path: '/embed/nodes/node-a/pods/x', level: 'item', title: 'Pod not found', node: 'node-a' },
    { path: '/nodes/node-a/volumes/kubernetes.io%2Fcsi%2Fd%5Ev', level: 'item', title: 'Volume not found', node: 'node-a' },
    { path: '/nope', level: 'node', title: 'Page not found', node: null },
  ] as const)('$path at $level level is "$title"', ({ path, level, title, node }) => {
    const d = describeNotFound(path, level);
    expect(d.title).toBe(title);
    expect(d.node).toBe(node);
  });

  it('names the decoded volume', () => {
    expect(describeNotFound('/nodes/a/volumes/kubernetes.io%2Fcsi%2Fd%5Ev', 'item').text).toContain('“kubernetes.io/csi/d^v”');
  });
});
