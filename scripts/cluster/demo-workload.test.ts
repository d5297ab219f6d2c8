import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { configMapSchema, persistentVolumeClaimSchema, podSchema, secretSchema } from '../../lib/sources/manifest/k8s-schemas.ts';
import { claimName, clusterDemoObjects, clusterDemoPods, stuckHostPath, workerPod, WORKER_LABEL, type ClusterDemoOptions, type KubeObject } from './demo-workload.ts';

const options: ClusterDemoOptions = { namespace: 'demo', managedNode: 'agent-0', kubeletNode: 'kubelet-0', hostDataDir: '/state/host-paths/demo', storageClass: 'csi-hostpath' };

interface PodShape {
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    nodeName: string;
    containers: { volumeMounts: { name: string }[] }[];
    volumes: ({ name: string } & Record<string, { path?: string; type?: string; claimName?: string; name?: string; secretName?: string } | undefined>)[];
  };
}

const pods = clusterDemoPods(options) as unknown as PodShape[];
const objects = clusterDemoObjects(options);
const podsOn = (node: string): PodShape[] => pods.filter((p) => p.spec.nodeName === node);
/** The API server assigns metadata.uid; the manifest schema wants one. */
const withUid = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...(o['metadata'] as object), uid: randomUUID() } });

describe('the cluster demo workload', () => {
  it('every pod, worker and namespaced object is valid for the agent and lives in the demo namespace', () => {
    for (const p of [...clusterDemoPods(options), workerPod(options, 'agent-0', 1), workerPod(options, 'kubelet-0', 2)]) {
      const parsed = podSchema.safeParse(withUid(p));
      expect(parsed.error?.issues ?? [], JSON.stringify(p)).toEqual([]);
      expect(parsed.data?.metadata.namespace).toBe('demo');
    }
    const byKind = (kind: string): KubeObject[] => objects.filter((o) => o['kind'] === kind);
    expect(objects[0]).toEqual({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' } });
    expect(byKind('ConfigMap').map((o) => configMapSchema.safeParse(withUid(o)).success)).toEqual([true]);
    // The API server turns stringData into data; the schema reads data only.
    const secret = byKind('Secret')[0] ?? {};
    expect(secretSchema.safeParse(withUid({ ...secret, data: {} })).success).toBe(true);
    expect(byKind('PersistentVolumeClaim').map((o) => persistentVolumeClaimSchema.safeParse(withUid(o)).success)).toEqual([true, true]);
  });

  it('pins three pods to each node, and mounts every volume it declares (only mounted volumes are set up)', () => {
    expect(podsOn('agent-0').map((p) => p.metadata.name)).toEqual(['web-0', 'db-0', 'log-shipper-0']);
    expect(podsOn('kubelet-0').map((p) => p.metadata.name)).toEqual(['api-0', 'reports-0', 'log-shipper-1']);
    expect(pods).toHaveLength(6);
    for (const p of pods) expect(p.spec.containers.flatMap((c) => c.volumeMounts.map((m) => m.name)).sort()).toEqual(p.spec.volumes.map((v) => v.name).sort());
    expect((workerPod(options, 'kubelet-0', 7) as unknown as PodShape).spec.nodeName).toBe('kubelet-0');
    expect((workerPod(options, 'agent-0', 7) as unknown as PodShape).metadata).toMatchObject({ name: 'worker-agent-0-7', labels: { [WORKER_LABEL]: 'true' } });
  });

  it('each node has a csi-hostpath claim of its own, used by exactly one of its pods', () => {
    const claims = objects.filter((o) => o['kind'] === 'PersistentVolumeClaim') as unknown as { metadata: { name: string }; spec: { storageClassName: string } }[];
    expect(claims.map((c) => [c.metadata.name, c.spec.storageClassName])).toEqual([
      ['data-agent-0', 'csi-hostpath'],
      ['data-kubelet-0', 'csi-hostpath'],
    ]);
    for (const node of ['agent-0', 'kubelet-0']) {
      const users = podsOn(node).filter((p) => p.spec.volumes.some((v) => v['persistentVolumeClaim']?.claimName === claimName(node)));
      expect(users).toHaveLength(1);
    }
    expect(pods.flatMap((p) => p.spec.volumes.map((v) => v['persistentVolumeClaim']?.claimName).filter((c) => c !== undefined)).sort()).toEqual(['data-agent-0', 'data-kubelet-0']);
  });

  it('each node has one stuck pod: a hostPath of type Directory below the demo dir that the workload never creates', () => {
    for (const node of ['agent-0', 'kubelet-0']) {
      const stuck = podsOn(node).filter((p) => p.spec.volumes.some((v) => v['hostPath']?.type === 'Directory'));
      expect(stuck.map((p) => p.spec.volumes.find((v) => v['hostPath'] !== undefined)?.['hostPath']?.path)).toEqual([stuckHostPath(options, node)]);
      expect(stuckHostPath(options, node).startsWith(`${options.hostDataDir}/`)).toBe(true);
    }
    // Every other hostPath may be created by the node.
    const others = pods.flatMap((p) => p.spec.volumes.map((v) => v['hostPath']).filter((h) => h !== undefined && h.type !== 'Directory'));
    expect(others.map((h) => h?.type)).toEqual(['DirectoryOrCreate']);
  });

  it('the configMap and secret the pods use are created with them', () => {
    const names = (kind: string): string[] => objects.filter((o) => o['kind'] === kind).map((o) => (o['metadata'] as { name: string }).name);
    const used = (source: 'configMap' | 'secret', key: 'name' | 'secretName'): string[] => [...new Set(pods.flatMap((p) => p.spec.volumes.map((v) => v[source]?.[key]).filter((n): n is string => n !== undefined)))];
    expect(used('configMap', 'name')).toEqual(names('ConfigMap'));
    expect(used('secret', 'secretName')).toEqual(names('Secret'));
  });
});
