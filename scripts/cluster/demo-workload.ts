// The workload of `npm run demo:cluster` (demo.ts): API objects for the local cluster, pinned to its
// two nodes, so the dashboard has something to show for both the managed agent and the observer.
// Plain data, no I/O; demo.ts applies it with the build's kubectl.
//
// In one namespace:
// - a ConfigMap `app-config` and a Secret `app-tls`;
// - per node a claim `data-<node>` of the StorageClass csi-hostpath (provisioned by the cluster's
//   external-provisioner, attached by the attach/detach controller and csi-attacher);
// - on the managed node: `web-0` (emptyDir, configMap, secret, downwardAPI), `db-0` (its claim and
//   a memory emptyDir) and `log-shipper-0`;
// - on the kubelet's node: `api-0` (emptyDir, configMap, secret, a hostPath DirectoryOrCreate),
//   `reports-0` (its claim) and `log-shipper-1`;
// - each `log-shipper-*` has a hostPath of type Directory that does not exist
//   ({@link stuckHostPath}): its mount fails (`hostPath type check failed: … is not a directory`)
//   and backs off until someone creates the directory;
// - {@link workerPod}: short-lived pods demo.ts creates and deletes on both nodes over time.
//
// Pods are placed with `spec.nodeName` (the cluster runs no scheduler). The ServiceAccount admission
// plugin adds each pod's `kube-api-access-*` projected volume. Containers use the pause image: the
// kubelet's fake CRI never pulls it, and the agent runs no containers.
import { join } from 'node:path';

/** A Kubernetes object as plain data. */
export type KubeObject = Record<string, unknown>;

export interface ClusterDemoOptions {
  readonly namespace: string;
  /** The node of the managed-mode agent (agent-0). */
  readonly managedNode: string;
  /** The node of the upstream kubelet (kubelet-0). */
  readonly kubeletNode: string;
  /** The parent of the demo's hostPath directories (below the cluster's state dir). */
  readonly hostDataDir: string;
  /** The StorageClass of the claims (the cluster's csi-hostpath). */
  readonly storageClass: string;
}

const IMAGE = 'registry.k8s.io/pause:3.10';

/** A volume of a pod without its name. */
type VolumeSource = Record<string, unknown>;

function pod(o: ClusterDemoOptions, name: string, node: string, volumes: Record<string, VolumeSource>, labels: Record<string, string> = {}): KubeObject {
  const names = Object.keys(volumes);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: o.namespace, labels: { app: name.replace(/-[0-9]+$/, ''), 'app.kubernetes.io/part-of': 'volumescope-demo', ...labels } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 5,
      // The kubelet (and the agent) set up only the volumes a container mounts (GetPodVolumeNames).
      containers: [{ name: 'app', image: IMAGE, volumeMounts: names.map((n) => ({ name: n, mountPath: `/mnt/${n}` })) }],
      volumes: names.map((n) => ({ name: n, ...volumes[n] })),
    },
  };
}

/** The claim of `node`: `data-<node>`. */
export const claimName = (node: string): string => `data-${node}`;

/** The hostPath (type Directory) that does not exist, so `log-shipper-*` on `node` is stuck. */
export const stuckHostPath = (o: Pick<ClusterDemoOptions, 'hostDataDir'>, node: string): string => join(o.hostDataDir, node, 'logs');

const shared: Record<string, VolumeSource> = {
  config: { configMap: { name: 'app-config' } },
  tls: { secret: { secretName: 'app-tls' } },
};

/** Namespace, ConfigMap, Secret and the two claims, in the order they must be created. */
export function clusterDemoObjects(o: ClusterDemoOptions): KubeObject[] {
  const claim = (node: string, capacity: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claimName(node), namespace: o.namespace },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: o.storageClass, resources: { requests: { storage: capacity } } },
  });
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.namespace } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: o.namespace }, data: { 'app.properties': 'mode=demo\nreplicas=2\n', 'feature-flags': 'dashboards=on\n' } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'app-tls', namespace: o.namespace },
      type: 'Opaque',
      stringData: { 'tls.crt': '-----BEGIN CERTIFICATE-----\n(demo)\n-----END CERTIFICATE-----\n', 'tls.key': '(demo key)\n' },
    },
    claim(o.managedNode, '64Mi'),
    claim(o.kubeletNode, '32Mi'),
  ];
}

/** The pods that run for the whole demo (see the file comment). */
export function clusterDemoPods(o: ClusterDemoOptions): KubeObject[] {
  const stuck = (node: string): VolumeSource => ({ hostPath: { path: stuckHostPath(o, node), type: 'Directory' } });
  return [
    pod(o, 'web-0', o.managedNode, {
      cache: { emptyDir: {} },
      ...shared,
      podinfo: { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
    }),
    pod(o, 'db-0', o.managedNode, { pgdata: { persistentVolumeClaim: { claimName: claimName(o.managedNode) } }, shm: { emptyDir: { medium: 'Memory' } } }),
    pod(o, 'log-shipper-0', o.managedNode, { logs: stuck(o.managedNode), config: shared['config'] ?? {} }),
    pod(o, 'api-0', o.kubeletNode, {
      scratch: { emptyDir: {} },
      ...shared,
      spool: { hostPath: { path: join(o.hostDataDir, o.kubeletNode, 'spool'), type: 'DirectoryOrCreate' } },
    }),
    pod(o, 'reports-0', o.kubeletNode, { reports: { persistentVolumeClaim: { claimName: claimName(o.kubeletNode) } }, tmp: { emptyDir: {} } }),
    pod(o, 'log-shipper-1', o.kubeletNode, { logs: stuck(o.kubeletNode), config: shared['config'] ?? {} }),
  ];
}

/** Label of the short-lived worker pods, so they can be listed and removed together. */
export const WORKER_LABEL = 'volumescope.dev/demo-worker';

/** Worker `n` on `node`: `worker-<node>-<n>`, an emptyDir and the shared configMap and secret. */
export function workerPod(o: ClusterDemoOptions, node: string, n: number): KubeObject {
  return pod(o, `worker-${node}-${String(n)}`, node, { scratch: { emptyDir: {} }, ...shared }, { [WORKER_LABEL]: 'true' });
}
