/**
 * The agent's CSI node info manager (`--register-node`): publishes what registered CSI drivers
 * report about this node, as kubernetes/kubernetes
 * pkg/volume/csi/nodeinfomanager/nodeinfomanager.go@v1.34 does:
 * - `InstallCSIDriver`: the node gets the annotation `csi.volume.kubernetes.io/nodeid` (a JSON
 *   map driver → node id, `updateNodeIDInNode`) and the driver's topology segments as labels
 *   (`updateTopologyLabels`; a label that exists with another value is a collision and fails the
 *   install), patched on the status subresource as the kubelet's `PatchNodeStatus`; then the
 *   CSINode named after the node (created when absent, owned by the Node: `CreateCSINode`) gets
 *   the entry `{name, nodeID, topologyKeys (sorted), allocatable.count}` (`installDriverToCSINode`;
 *   count only when `max_volumes_per_node` > 0), replacing an older entry of the same driver;
 *   an unchanged entry is not written again.
 * - `UninstallCSIDriver`: the driver's entry leaves the CSINode and the annotation; topology
 *   labels stay (as upstream).
 * Not done: upstream's `removeMaxAttachLimit` (it deletes the legacy `attachable-volumes-csi-*`
 * node capacity, which this agent never writes).
 * Writes are read-modify-write with the object's resourceVersion; a 409 Conflict is retried
 * (`retry.RetryOnConflict`, up to 5 tries).
 */
import { CoreV1Api, Observable, PatchStrategy, setHeaderOptions, StorageV1Api, V1CSINode, V1CSINodeDriver, V1CSINodeSpec, V1ObjectMeta, V1OwnerReference, V1VolumeNodeResources, type KubeConfig } from '@kubernetes/client-node';
import { model } from '../../lib/kube-client/model.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import { makeApiClient } from '../../lib/sources/kube/api-client.ts';
import { apiErrorStatus } from '../../lib/kube-client/api-errors.ts';
import { RequestDeadlines } from '../../lib/kube-client/request-deadline.ts';
import type { CsiNodeDriverInfo, CsiNodeInfoManager } from '../../lib/volume/csi/index.ts';
import type { Logger } from '../../lib/volume/logger.ts';

/** `annotationKeyNodeID`. */
export const CsiNodeIdAnnotation = 'csi.volume.kubernetes.io/nodeid';
const conflictRetries = 5;
const requestTimeoutMs = 30_000;

/**
 * A driver's topology segment collides with a node label of another value
 * (`updateTopologyLabels`): the install fails, so the driver does not register.
 */
export class CsiNodeInfoCollisionError extends Error {
  override readonly name = 'CsiNodeInfoCollisionError';
  constructor(
    readonly label: string,
    message: string,
  ) {
    super(message);
  }
}

export function isCsiNodeInfoCollisionError(err: unknown): err is CsiNodeInfoCollisionError {
  return err instanceof CsiNodeInfoCollisionError;
}

/** The node annotation value with `driver` set to `nodeId` (null: removed); null when unchanged. */
export function nodeIdAnnotation(existing: string | undefined, driver: string, nodeId: string | null): string | null {
  const map = new Map<string, string>();
  if (existing !== undefined && existing !== '') {
    const parsed: unknown = JSON.parse(existing);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      for (const [key, value] of Object.entries(parsed)) if (typeof value === 'string') map.set(key, value);
    }
  }
  if ((nodeId === null && !map.has(driver)) || (nodeId !== null && map.get(driver) === nodeId)) return null;
  if (nodeId === null) map.delete(driver);
  else map.set(driver, nodeId);
  return JSON.stringify(Object.fromEntries(map));
}

/** The CSINode drivers with `info`'s entry installed; null when it is already there as wanted. */
export function installDriverEntry(drivers: readonly V1CSINodeDriver[], info: CsiNodeDriverInfo): V1CSINodeDriver[] | null {
  const topologyKeys = Object.keys(info.topology).sort();
  const entry = model(V1CSINodeDriver, {
    name: info.name,
    nodeID: info.nodeId,
    topologyKeys,
    ...(info.maxVolumesPerNode > 0 ? { allocatable: model(V1VolumeNodeResources, { count: info.maxVolumesPerNode }) } : {}),
  });
  const existing = drivers.find((d) => d.name === info.name);
  if (
    existing !== undefined &&
    existing.nodeID === entry.nodeID &&
    JSON.stringify([...(existing.topologyKeys ?? [])].sort()) === JSON.stringify(topologyKeys) &&
    (existing.allocatable?.count ?? 0) === (entry.allocatable?.count ?? 0)
  ) {
    return null;
  }
  return [...drivers.filter((d) => d.name !== info.name), entry];
}

export interface CsiNodeInfoOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  clock: Clock;
  logger: Logger;
}

export class KubeCsiNodeInfo implements CsiNodeInfoManager {
  private readonly core: CoreV1Api;
  private readonly storage: StorageV1Api;
  private readonly deadlines: RequestDeadlines;

  constructor(private readonly o: CsiNodeInfoOptions) {
    this.core = makeApiClient(o.kubeConfig, CoreV1Api);
    this.storage = makeApiClient(o.kubeConfig, StorageV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock: o.clock, timeoutMs: requestTimeoutMs });
  }

  async installDriver(info: CsiNodeDriverInfo): Promise<void> {
    await this.onConflict(() => this.updateNode(info.name, info.nodeId, info.topology));
    await this.onConflict(() => this.updateCsiNode((drivers) => installDriverEntry(drivers, info)));
    this.o.logger.info(`CSINode ${this.o.nodeName}: driver ${info.name} installed (node id ${info.nodeId})`, { driver: info.name });
  }

  async uninstallDriver(name: string): Promise<void> {
    await this.onConflict(() => this.updateCsiNode((drivers) => (drivers.some((d) => d.name === name) ? drivers.filter((d) => d.name !== name) : null), false));
    await this.onConflict(() => this.updateNode(name, null, {}));
    this.o.logger.info(`CSINode ${this.o.nodeName}: driver ${name} uninstalled`, { driver: name });
  }

  private async onConflict(write: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        return;
      } catch (err) {
        if (apiErrorStatus(err) !== 409 || attempt >= conflictRetries) throw err;
      }
    }
  }

  /** `updateNodeIDInNode` + `updateTopologyLabels` (or `removeNodeIDFromNode` with nodeId null). */
  private async updateNode(driver: string, nodeId: string | null, topology: Readonly<Record<string, string>>): Promise<void> {
    const name = this.o.nodeName;
    const node = await this.deadlines.run(`GET node ${name}`, (options) => this.core.readNode({ name }, options));
    const labels: Record<string, string> = {};
    for (const [key, value] of Object.entries(topology)) {
      const current = node.metadata?.labels?.[key];
      if (current !== undefined && current !== value) {
        throw new CsiNodeInfoCollisionError(key, `detected topology value collision: driver reported "${key}":"${value}" but existing label is "${key}":"${current}"`);
      }
      if (current === undefined) labels[key] = value;
    }
    const annotation = nodeIdAnnotation(node.metadata?.annotations?.[CsiNodeIdAnnotation], driver, nodeId);
    if (annotation === null && Object.keys(labels).length === 0) return;
    const body = {
      metadata: {
        resourceVersion: node.metadata?.resourceVersion,
        ...(annotation === null ? {} : { annotations: { [CsiNodeIdAnnotation]: annotation === '{}' ? null : annotation } }),
        ...(Object.keys(labels).length === 0 ? {} : { labels }),
      },
    };
    await this.deadlines.run(`PATCH node ${name}/status`, (options) =>
      this.core.patchNodeStatus({ name, body }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch, options)),
    );
  }

  /** Reads (or, with `create`, creates) the CSINode and writes `change(drivers)` unless it is null. */
  private async updateCsiNode(change: (drivers: readonly V1CSINodeDriver[]) => V1CSINodeDriver[] | null, create = true): Promise<void> {
    const name = this.o.nodeName;
    let csiNode: V1CSINode;
    try {
      csiNode = await this.deadlines.run(`GET csinode ${name}`, (options) => this.storage.readCSINode({ name }, options));
    } catch (err) {
      if (apiErrorStatus(err) !== 404 || !create) {
        if (apiErrorStatus(err) === 404) return;
        throw err;
      }
      csiNode = await this.createCsiNode();
    }
    // An empty list comes back as null (the API omits it).
    const drivers = change(csiNode.spec.drivers ?? []);
    if (drivers === null) return;
    const body = model(V1CSINode, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: csiNode.metadata, spec: model(V1CSINodeSpec, { drivers }) });
    await this.deadlines.run(`PUT csinode ${name}`, (options) => this.storage.replaceCSINode({ name, body }, options));
  }

  /** `CreateCSINode`: empty, owned by the Node (so it is deleted with it). */
  private async createCsiNode(): Promise<V1CSINode> {
    const name = this.o.nodeName;
    const node = await this.deadlines.run(`GET node ${name}`, (options) => this.core.readNode({ name }, options));
    const uid = node.metadata?.uid ?? '';
    const body = model(V1CSINode, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: model(V1ObjectMeta, { name, ownerReferences: [model(V1OwnerReference, { apiVersion: 'v1', kind: 'Node', name, uid })] }),
      spec: model(V1CSINodeSpec, { drivers: [] }),
    });
    return this.deadlines.run(`POST csinode ${name}`, (options) => this.storage.createCSINode({ body }, options));
  }
}
