/**
 * The engine's hook for the kubelet's CSI node info manager (kubernetes/kubernetes
 * pkg/volume/csi/nodeinfomanager/nodeinfomanager.go@v1.34): what a registered driver reports
 * about this node is published to the API server (the CSINode object, the node's
 * `csi.volume.kubernetes.io/nodeid` annotation and topology labels). The engine has no
 * Kubernetes client: the agent implements this interface (agent/node/csi-node-info.ts).
 *
 * Contract, as the kubelet's RegisterPlugin / DeRegisterPlugin (pkg/volume/csi/csi_plugin.go@v1.34):
 * - `installDriver` runs after NodeGetInfo succeeded and before the driver counts as registered;
 *   when it rejects, the registration fails (and is retried like any failed handshake);
 * - `uninstallDriver` runs when the driver deregisters; a failure is only logged.
 */
export interface CsiNodeDriverInfo {
  /** The CSI driver name. */
  name: string;
  /** NodeGetInfo `node_id`. */
  nodeId: string;
  /** NodeGetInfo `max_volumes_per_node`; 0 = no limit. */
  maxVolumesPerNode: number;
  /** NodeGetInfo `accessible_topology.segments`; empty when the driver reports none. */
  topology: Readonly<Record<string, string>>;
}

export interface CsiNodeInfoManager {
  installDriver(info: CsiNodeDriverInfo): Promise<void>;
  uninstallDriver(name: string): Promise<void>;
}
