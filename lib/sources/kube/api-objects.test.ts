import { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { convertConfigMap, convertNode, convertPersistentVolume, convertPod, convertSecret } from './api-objects.ts';
import { toPlainJson, toRFC3339, withoutManagedFields } from './plain-json.ts';

describe('toRFC3339 and toPlainJson', () => {
  it('writes whole-second times without fractions, as the API server does', () => {
    expect(toRFC3339(new Date(Date.UTC(2024, 0, 2, 3, 4, 5)))).toBe('2024-01-02T03:04:05Z');
    expect(toRFC3339(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 120)))).toBe('2024-01-02T03:04:05.120Z');
  });

  it('turns model instances and dates into plain JSON and drops unset members', () => {
    const pod = new V1Pod();
    pod.metadata = Object.assign(new V1ObjectMeta(), { name: 'web', deletionTimestamp: new Date(Date.UTC(2024, 5, 1)) });
    expect(toPlainJson(pod)).toEqual({ metadata: { name: 'web', deletionTimestamp: '2024-06-01T00:00:00Z' } });
    expect(toPlainJson({ a: null, b: undefined, c: [1, null], d: Number.NaN })).toEqual({ c: [1, null] });
  });
});

describe('withoutManagedFields', () => {
  it('drops metadata.managedFields of a plain object or a model instance and leaves the input as it was', () => {
    const raw = { metadata: { name: 'web', managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:spec': {} } }] }, spec: { nodeName: 'a' } };
    expect(withoutManagedFields(raw)).toEqual({ metadata: { name: 'web' }, spec: { nodeName: 'a' } });
    expect(raw.metadata.managedFields).toHaveLength(1);

    const pod = new V1Pod();
    pod.metadata = Object.assign(new V1ObjectMeta(), { name: 'web', managedFields: [] });
    expect(toPlainJson(withoutManagedFields(pod))).toEqual({ metadata: { name: 'web' } });
    expect(pod.metadata.managedFields).toEqual([]);
  });

  it('returns anything without managedFields unchanged (the same object)', () => {
    const raw = { metadata: { name: 'web' } };
    expect(withoutManagedFields(raw)).toBe(raw);
    for (const value of [null, undefined, 'pod', 3, [{ metadata: { managedFields: [] } }], { metadata: null }]) expect(withoutManagedFields(value)).toBe(value);
  });
});

describe('convertPod', () => {
  it('keeps the modelled fields of a client-node pod with Date timestamps, frozen', () => {
    const raw = {
      metadata: { name: 'web', namespace: 'prod', uid: 'u1', resourceVersion: '7', deletionTimestamp: new Date(Date.UTC(2024, 0, 1, 12)), managedFields: [{ manager: 'x' }] },
      spec: {
        nodeName: 'node-a',
        containers: [{ name: 'app', image: 'busybox', ports: [{ containerPort: 80 }], volumeMounts: [{ name: 'data', mountPath: '/data', mountPropagation: 'None' }] }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        securityContext: { fsGroup: 1000 },
        tolerations: [{ key: 'k' }],
      },
      status: { phase: 'Running', podIP: '10.0.0.1' },
    };

    const result = convertPod(raw);

    expect(result).toEqual({
      ok: true,
      warnings: [],
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'prod', uid: 'u1', resourceVersion: '7', deletionTimestamp: '2024-01-01T12:00:00Z' },
        spec: {
          nodeName: 'node-a',
          containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          securityContext: { fsGroup: 1000 },
        },
        status: { phase: 'Running' },
      },
    });
    expect(result.ok && Object.isFrozen(result.object.spec.containers[0])).toBe(true);
  });

  it('keeps a volume whose source does not fit the model as a bare name, with a warning', () => {
    const result = convertPod({
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        containers: [{ name: 'app' }],
        volumes: [
          { name: 'huge', emptyDir: { medium: 'HugePages' } },
          { name: 'share', nfs: { server: 's', path: '/p' } },
          { name: 'ok', emptyDir: { medium: 'Memory' } },
        ],
      },
    });

    expect(result.ok && result.object.spec.volumes).toEqual([{ name: 'huge' }, { name: 'share' }, { name: 'ok', emptyDir: { medium: 'Memory' } }]);
    expect(result.ok && result.warnings).toEqual([
      expect.stringMatching(/^spec\.volumes\[0\] \(huge\): emptyDir\.medium: .*; the volume is kept without a source$/) as unknown,
      'spec.volumes[1] (share): unsupported volume source nfs',
    ]);
  });

  it('rejects a pod whose shape is wrong', () => {
    expect(convertPod({ metadata: { name: 'web' }, spec: { containers: 'app' } })).toEqual({ ok: false, error: expect.stringContaining('spec.containers') as unknown });
    expect(convertPod({ spec: { containers: [] } }).ok).toBe(false);
  });
});

describe('convert other kinds', () => {
  it('sets apiVersion and kind, which LIST items lack', () => {
    const cm = convertConfigMap({ metadata: { name: 'c', namespace: 'd' }, data: { a: 'b' }, immutable: true });
    const secret = convertSecret({ metadata: { name: 's', namespace: 'd' }, type: 'Opaque', data: { a: 'Yg==' } });
    expect(cm).toEqual({ ok: true, warnings: [], object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'd' }, data: { a: 'b' } } });
    expect(secret.ok && secret.object.kind).toBe('Secret');
  });

  it('keeps a PersistentVolume of an unmodelled source without that source', () => {
    const pv = convertPersistentVolume({ metadata: { name: 'pv' }, spec: { capacity: { storage: '1Gi' }, nfs: { server: 's', path: '/' }, claimRef: { namespace: 'n', name: 'c', kind: 'PersistentVolumeClaim' } } });
    expect(pv.ok && pv.object.spec).toEqual({ capacity: { storage: '1Gi' }, claimRef: { namespace: 'n', name: 'c' } });
  });

  it('keeps only the attachment fields and the conditions of a Node status', () => {
    const node = convertNode({
      metadata: { name: 'node-a', resourceVersion: '9' },
      status: {
        volumesAttached: [{ name: 'v', devicePath: '/dev/sdb' }],
        volumesInUse: ['v'],
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: '2026-11-30T08:00:05Z', lastTransitionTime: '2026-11-30T08:00:00Z' }],
        capacity: { cpu: '2' },
      },
    });
    expect(node).toEqual({
      ok: true,
      warnings: [],
      object: {
        metadata: { name: 'node-a', resourceVersion: '9' },
        status: {
          volumesAttached: [{ name: 'v', devicePath: '/dev/sdb' }],
          volumesInUse: ['v'],
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastTransitionTime: '2026-11-30T08:00:00Z' }],
        },
      },
    });
  });
});
