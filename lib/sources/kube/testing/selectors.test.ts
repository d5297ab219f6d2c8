import { describe, expect, it } from 'vitest';
import { isSelectorError, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from './selectors.ts';

const pod = { metadata: { name: 'web', namespace: 'prod', labels: { app: 'web', tier: 'front' } }, spec: { nodeName: 'node-a' }, status: { phase: 'Running' } };

describe('field selectors', () => {
  it('match on equality and inequality of the supported fields', () => {
    expect(matchesFields(pod, parseFieldSelector('pods', 'spec.nodeName=node-a,metadata.namespace==prod'))).toBe(true);
    expect(matchesFields(pod, parseFieldSelector('pods', 'spec.nodeName=node-b'))).toBe(false);
    expect(matchesFields(pod, parseFieldSelector('pods', 'status.phase!=Failed'))).toBe(true);
    expect(matchesFields(pod, parseFieldSelector('pods', ''))).toBe(true);
  });

  it('refuse fields the kind does not support', () => {
    expect(() => parseFieldSelector('configmaps', 'spec.nodeName=node-a')).toThrow('field label not supported: spec.nodeName');
    expect(() => parseFieldSelector('pods', 'garbage')).toThrow(expect.toSatisfy(isSelectorError) as Error);
  });
});

describe('label selectors', () => {
  it.each([
    ['app=web', true],
    ['app==web,tier!=back', true],
    ['app!=web', false],
    ['tier', true],
    ['!tier', false],
    ['tier in (front, back)', true],
    ['tier notin (front)', false],
    ['missing notin (x)', true],
  ])('%s matches: %s', (selector, expected) => {
    expect(matchesLabels(pod, parseLabelSelector(selector))).toBe(expected);
  });
});
