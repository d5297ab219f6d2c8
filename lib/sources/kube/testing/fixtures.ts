/**
 * Test support: small builders for the objects tests put into a {@link FakeApiServer}. They
 * return the k8s-types shapes; the server adds uid, resourceVersion and timestamps.
 */
import type {
  ConfigMap,
  CSIDriver,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Volume,
} from '../../../volume/k8s-types.ts';

export function pod(name: string, nodeName: string, options: { namespace?: string; volumes?: Volume[]; labels?: Record<string, string> } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: options.namespace ?? 'default', ...(options.labels === undefined ? {} : { labels: options.labels }) },
    spec: {
      nodeName,
      containers: [{ name: 'app', image: 'busybox', volumeMounts: (options.volumes ?? []).map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }],
      ...(options.volumes === undefined ? {} : { volumes: options.volumes }),
    },
    status: { phase: 'Running' },
  };
}

export function claim(name: string, options: { namespace?: string; volumeName?: string; phase?: 'Pending' | 'Bound' } = {}): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: options.namespace ?? 'default' },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      ...(options.volumeName === undefined ? {} : { volumeName: options.volumeName }),
    },
    status: { phase: options.phase ?? (options.volumeName === undefined ? 'Pending' : 'Bound') },
  };
}

export function csiPersistentVolume(name: string, options: { driver?: string; claimNamespace?: string; claimName?: string; nodePublishSecret?: { name: string; namespace: string } } = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      ...(options.claimName === undefined ? {} : { claimRef: { namespace: options.claimNamespace ?? 'default', name: options.claimName } }),
      csi: {
        driver: options.driver ?? 'csi.example.com',
        volumeHandle: `handle-${name}`,
        ...(options.nodePublishSecret === undefined ? {} : { nodePublishSecretRef: options.nodePublishSecret }),
      },
    },
    status: { phase: 'Bound' },
  };
}

export function configMap(name: string, data: Record<string, string>, namespace = 'default'): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

export function secret(name: string, data: Record<string, string>, namespace = 'default'): Secret {
  const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', data: encoded };
}

export function csiDriver(name: string, attachRequired = false): CSIDriver {
  return { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name }, spec: { attachRequired } };
}

export function node(name: string, volumesAttached: { name: string; devicePath: string }[] = []): Node {
  return { metadata: { name }, status: { volumesAttached, volumesInUse: [] } };
}
