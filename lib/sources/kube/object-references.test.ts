import { describe, expect, it } from 'vitest';
import type { PersistentVolume, Pod } from '../../volume/k8s-types.ts';
import { persistentVolumeSecretReferences, podReferences, refPath } from './object-references.ts';

describe('podReferences', () => {
  it('lists the claims, config maps and secrets of every volume kind once, in the pod namespace', () => {
    const pod: Pod = {
      metadata: { name: 'web', namespace: 'prod' },
      spec: {
        containers: [{ name: 'app' }],
        volumes: [
          { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } },
          { name: 'settings', configMap: { name: 'settings' } },
          { name: 'creds', secret: { secretName: 'creds' } },
          { name: 'bundle', projected: { sources: [{ configMap: { name: 'settings' } }, { secret: { name: 'token' } }, { serviceAccountToken: { path: 't' } }] } },
          { name: 'inline', csi: { driver: 'd', nodePublishSecretRef: { name: 'publish' } } },
          { name: 'unnamed', configMap: {} },
          { name: 'tmp', emptyDir: {} },
        ],
      },
    };

    expect(podReferences(pod).map((r) => `${r.kind} ${r.namespace}/${r.name}`)).toEqual([
      'PersistentVolumeClaim prod/data',
      'PersistentVolumeClaim prod/web-scratch',
      'ConfigMap prod/settings',
      'Secret prod/creds',
      'Secret prod/token',
      'Secret prod/publish',
    ]);
  });
});

describe('persistentVolumeSecretReferences', () => {
  it('lists the node-side CSI secrets, not the controller ones', () => {
    const pv: PersistentVolume = {
      metadata: { name: 'pv' },
      spec: {
        csi: {
          driver: 'd',
          volumeHandle: 'h',
          controllerPublishSecretRef: { name: 'ctrl', namespace: 'storage' },
          nodeStageSecretRef: { name: 'stage', namespace: 'storage' },
          nodePublishSecretRef: { name: 'stage', namespace: 'storage' },
          nodeExpandSecretRef: { name: 'expand' },
        },
      },
    };
    expect(persistentVolumeSecretReferences(pv)).toEqual([
      { kind: 'Secret', namespace: 'storage', name: 'stage' },
      { kind: 'Secret', namespace: 'default', name: 'expand' },
    ]);
  });
});

describe('refPath', () => {
  it('is the object URL path', () => {
    expect(refPath({ kind: 'PersistentVolumeClaim', namespace: 'prod', name: 'data' })).toBe('/api/v1/namespaces/prod/persistentvolumeclaims/data');
  });
});
