import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deriveManifestPodUID } from './pod-uid.ts';

const uuidLayout = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('deriveManifestPodUID', () => {
  it('returns the same uid for the same node, namespace and name', () => {
    expect(deriveManifestPodUID('node-a', 'default', 'web')).toBe(deriveManifestPodUID('node-a', 'default', 'web'));
  });

  it('is pinned, because changing the derivation would make every manifest pod a new pod', () => {
    // sha256('["volumescope/manifest-pod-uid/v1","node-a","default","web"]') =
    // 06c0f2bb09ae1184f866a224 0332503c…; version nibble → 8, variant nibble f → b.
    expect(deriveManifestPodUID('node-a', 'default', 'web')).toBe('06c0f2bb-09ae-8184-b866-a2240332503c');
  });

  it.each<{ name: string; other: [node: string, namespace: string, name: string] }>([
    { name: 'differs across namespaces', other: ['node-a', 'kube-system', 'web'] },
    { name: 'differs across names', other: ['node-a', 'default', 'web-2'] },
    { name: 'differs across nodes', other: ['node-b', 'default', 'web'] },
    { name: 'does not confuse a namespace/name split', other: ['node-a', 'defaul', 'tweb'] },
  ])('$name', ({ other }) => {
    expect(deriveManifestPodUID(...other)).not.toBe(deriveManifestPodUID('node-a', 'default', 'web'));
  });

  it('always has the RFC 4122 layout with version 8 and the RFC variant', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (node, namespace, name) => {
        expect(deriveManifestPodUID(node, namespace, name)).toMatch(uuidLayout);
      }),
    );
  });
});
