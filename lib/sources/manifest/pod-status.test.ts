import { describe, expect, it } from 'vitest';
import type { PodPhase } from '../../volume/k8s-types.ts';
import { isPodTerminated } from './pod-status.ts';

describe('isPodTerminated', () => {
  it.each<{ phase: PodPhase | undefined; terminated: boolean }>([
    { phase: undefined, terminated: false },
    { phase: 'Pending', terminated: false },
    { phase: 'Running', terminated: false },
    { phase: 'Unknown', terminated: false },
    { phase: 'Succeeded', terminated: true },
    { phase: 'Failed', terminated: true },
  ])('says a pod in phase $phase is terminated: $terminated', ({ phase, terminated }) => {
    const pod = { metadata: { name: 'web' }, spec: { containers: [{ name: 'app' }] }, ...(phase === undefined ? {} : { status: { phase } }) };
    expect(isPodTerminated(pod)).toBe(terminated);
  });
});
