/**
 * Test support: the cluster side of a CSI attachment, played by the test, because no
 * kube-controller-manager or external-attacher can run here. `attach` does what the
 * attach/detach controller and the CSI external-attacher do together for one volume on one node:
 * ControllerPublishVolume on the (real) driver over gRPC, the VolumeAttachment object
 * `csi-<sha256(handle+driver+node)>` with `status.attached` and the publish context as
 * `attachmentMetadata`, and the volume in `node.status.volumesAttached` with the attachment
 * name as device path. `removeFromNodeStatus` only takes it out of `volumesAttached` (what the
 * controller does when it decides to detach), leaving the driver state alone.
 */
import { CsiClient } from '../../../lib/volume/csi/csi-client.ts';
import { attachmentName } from '../../../lib/volume/csi/vol-data.ts';
import { realClock } from '../../../lib/clock/clock.ts';
import type { FakeApiServer } from '../../../lib/sources/kube/testing/fake-apiserver.ts';
import type { JsonObject } from '../../../lib/sources/kube/plain-json.ts';

export interface TestAttachDetachControllerOptions {
  api: FakeApiServer;
  nodeName: string;
  /** The driver's node id (NodeGetInfo). */
  nodeId: string;
  driverName: string;
  /** The driver's CSI endpoint (`unix://…` or a socket path). */
  driverEndpoint: string;
}

export class TestAttachDetachController {
  private readonly client: CsiClient;

  constructor(private readonly o: TestAttachDetachControllerOptions) {
    this.client = new CsiClient(o.driverEndpoint, { clock: realClock, timeoutMs: 10_000 });
  }

  /** The unique volume name the node reports (`kubernetes.io/csi/<driver>^<handle>`). */
  uniqueName(handle: string): string {
    return `kubernetes.io/csi/${this.o.driverName}^${handle}`;
  }

  /** The node's `status.volumesInUse`, as the API server has it. */
  volumesInUse(): string[] {
    const status = this.node()['status'];
    const inUse = typeof status === 'object' && status !== null && !Array.isArray(status) ? status['volumesInUse'] : undefined;
    return Array.isArray(inUse) ? inUse.filter((v): v is string => typeof v === 'string') : [];
  }

  async attach(handle: string, volumeContext: Record<string, string> = { capacity: '64Mi' }): Promise<void> {
    const { publish_context: publishContext } = await this.client.controllerPublishVolume({
      volume_id: handle,
      node_id: this.o.nodeId,
      volume_capability: { mount: { fs_type: 'ext4', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      readonly: false,
      volume_context: volumeContext,
    });
    const name = attachmentName(handle, this.o.driverName, this.o.nodeName);
    this.o.api.put('volumeattachments', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name },
      spec: { attacher: this.o.driverName, nodeName: this.o.nodeName, source: { persistentVolumeName: `pv-${handle}` } },
      status: { attached: true, attachmentMetadata: publishContext },
    });
    this.setVolumesAttached([...this.volumesAttached().filter((v) => v.name !== this.uniqueName(handle)), { name: this.uniqueName(handle), devicePath: name }]);
  }

  /** Takes the volume out of `node.status.volumesAttached` only. */
  removeFromNodeStatus(handle: string): void {
    this.setVolumesAttached(this.volumesAttached().filter((v) => v.name !== this.uniqueName(handle)));
  }

  close(): void {
    this.client.close();
  }

  private node(): JsonObject {
    const node = this.o.api.get('nodes', undefined, this.o.nodeName);
    if (node === undefined) throw new Error(`node ${this.o.nodeName} does not exist in the test API server`);
    return node;
  }

  private volumesAttached(): { name: string; devicePath: string }[] {
    const status = this.node()['status'];
    const attached = typeof status === 'object' && status !== null && !Array.isArray(status) ? status['volumesAttached'] : undefined;
    if (!Array.isArray(attached)) return [];
    return attached.flatMap((v) =>
      typeof v === 'object' && v !== null && !Array.isArray(v) && typeof v['name'] === 'string' && typeof v['devicePath'] === 'string' ? [{ name: v['name'], devicePath: v['devicePath'] }] : [],
    );
  }

  private setVolumesAttached(volumesAttached: { name: string; devicePath: string }[]): void {
    const node = this.node();
    const status = typeof node['status'] === 'object' && node['status'] !== null && !Array.isArray(node['status']) ? node['status'] : {};
    this.o.api.put('nodes', { ...node, status: { ...status, volumesAttached } });
  }
}
