import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ContainerState } from '../../lib/api/index.ts';
import { PodStatusText } from './pod-status.tsx';

const creating: ContainerState = { name: 'app', kind: 'container', state: 'waiting', reason: 'ContainerCreating', since: Date.now() - 61_000, sinceObserved: true, ready: false, restartCount: 0 };

describe('PodStatusText', () => {
  it('shows the phase and each container’s state with where its time comes from', () => {
    const html = renderToStaticMarkup(createElement(PodStatusText, { status: { phase: 'Pending', containers: [creating] } }));
    expect(html).toContain('phase Pending');
    expect(html).toMatch(/app: ContainerCreating since 1 min( \d+ s)?/);
    expect(html).toContain('title="first seen in this state by the agent at ');
  });

  it('renders nothing where the source has no status (a manifest pod, the demo)', () => {
    expect(renderToStaticMarkup(createElement(PodStatusText, { status: {} }))).toBe('');
    expect(renderToStaticMarkup(createElement(PodStatusText, { status: undefined }))).toBe('');
  });
});
