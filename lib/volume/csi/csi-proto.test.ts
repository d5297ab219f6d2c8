import type { MethodDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { describe, expect, it } from 'vitest';
import { CSI_METHODS, CSI_PROTO_PATH, methodDefinition, PLUGIN_REGISTRATION_PROTO_PATH, PROTO_LOADER_OPTIONS, REGISTRATION_METHODS } from './csi-proto.ts';

/** The test servers' definitions: the same files through @grpc/proto-loader with the same options. */
const reference = loadSync([CSI_PROTO_PATH, PLUGIN_REGISTRATION_PROTO_PATH], PROTO_LOADER_OPTIONS);

function referenceMethod(service: string, method: string): MethodDefinition<object, unknown> {
  const def = reference[service] as unknown as Record<string, MethodDefinition<object, unknown>>;
  const m = def[method];
  if (m === undefined) throw new Error(`the reference lacks ${service}/${method}`);
  return m;
}

const stageRequest = {
  volume_id: 'vol-1',
  publish_context: { devicePath: '/dev/loop3' },
  staging_target_path: '/var/lib/kubelet/plugins/kubernetes.io/csi/d/abc/globalmount',
  volume_capability: { mount: { fs_type: 'ext4', mount_flags: ['noatime'], volume_mount_group: '' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
  secrets: { password: 'p' },
  volume_context: { 'storage.kubernetes.io/csiProvisionerIdentity': 'x' },
};

describe('methodDefinition', () => {
  it('has the path, streaming flags and name proto-loader gives every called method', () => {
    for (const [method, service] of [...Object.entries(CSI_METHODS), ...Object.entries(REGISTRATION_METHODS)]) {
      const ours = methodDefinition(service, method);
      const theirs = referenceMethod(service, method);
      expect({ path: ours.path, requestStream: ours.requestStream, responseStream: ours.responseStream, originalName: ours.originalName }).toEqual({
        path: theirs.path,
        requestStream: theirs.requestStream,
        responseStream: theirs.responseStream,
        originalName: theirs.originalName,
      });
    }
  });

  it('encodes a request to the bytes proto-loader encodes (maps, oneof, enum by name)', () => {
    const ours = methodDefinition('csi.v1.Node', 'NodeStageVolume').requestSerialize(stageRequest);
    const theirs = referenceMethod('csi.v1.Node', 'NodeStageVolume').requestSerialize(stageRequest);
    expect(Buffer.isBuffer(ours)).toBe(true);
    expect(ours.toString('hex')).toBe(theirs.toString('hex'));
  });

  it('decodes a response as proto-loader does: defaults filled in, enums as names, int64 as numbers, the oneof named', () => {
    const theirsNodeInfo = referenceMethod('csi.v1.Node', 'NodeGetInfo');
    const bytes = theirsNodeInfo.responseSerialize({ node_id: 'node-1', max_volumes_per_node: 12 });
    const decoded = methodDefinition('csi.v1.Node', 'NodeGetInfo').responseDeserialize(bytes);
    expect(decoded).toEqual(theirsNodeInfo.responseDeserialize(bytes));
    expect(decoded).toMatchObject({ node_id: 'node-1', max_volumes_per_node: 12 });

    const stage = methodDefinition('csi.v1.Node', 'NodeStageVolume');
    const roundTrip = stage.requestDeserialize(stage.requestSerialize(stageRequest));
    expect(roundTrip).toEqual(referenceMethod('csi.v1.Node', 'NodeStageVolume').requestDeserialize(Buffer.from(stage.requestSerialize(stageRequest))));
    expect(roundTrip).toMatchObject({ volume_capability: { access_type: 'mount', access_mode: { mode: 'SINGLE_NODE_WRITER' } } });
  });

  it('refuses an array as proto-loader does, and names a method or service the protos lack', () => {
    expect(() => methodDefinition('csi.v1.Node', 'NodeStageVolume').requestSerialize([])).toThrow('Failed to serialize message: expected object with NodeStageVolumeRequest structure, got array instead');
    expect(() => methodDefinition('csi.v1.Node', 'NodeFly')).toThrow('method csi.v1.Node/NodeFly is not declared in the CSI protos');
    expect(() => methodDefinition('csi.v1.Nope', 'Probe')).toThrow('service csi.v1.Nope is not declared in the CSI protos');
  });
});
