import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { FIXTURE_T0 } from '../../lib/api/testing/snapshot-fixtures.ts';
import { nodeConditionsView } from '../../lib/dashboard/node-conditions-view.ts';
import { NodeConditions } from './node-conditions.tsx';

const conditions = [
  { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', lastTransitionTime: FIXTURE_T0 },
  { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'disk usage above threshold', lastTransitionTime: FIXTURE_T0 },
  { type: 'Ready', status: 'True', reason: 'KubeletReady', lastTransitionTime: FIXTURE_T0 },
];

describe('nodeConditionsView', () => {
  it('puts unhealthy conditions first and names their status and reason; Ready is healthy when True, the others when False', () => {
    expect(nodeConditionsView(conditions)?.map((c) => [c.text, c.healthy])).toEqual([
      ['DiskPressure: True (KubeletHasDiskPressure)', false],
      ['MemoryPressure', true],
      ['Ready', true],
    ]);
    expect(nodeConditionsView([{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', lastTransitionTime: null }])?.[0]?.healthy).toBe(false);
  });
});

describe('NodeConditions', () => {
  it('shows each condition, the unhealthy ones with their message as title', () => {
    const html = renderToStaticMarkup(createElement(NodeConditions, { conditions }));
    expect(html).toContain('title="disk usage above threshold"');
    expect(html).toMatch(/DiskPressure: True \(KubeletHasDiskPressure\)<span class="muted small"> since /);
    expect(html).toContain('Ready</span>');
  });

  it('shows nothing when the snapshot has no conditions (manifest source, no Node object)', () => {
    expect(renderToStaticMarkup(createElement(NodeConditions, { conditions: undefined }))).toBe('');
  });
});
