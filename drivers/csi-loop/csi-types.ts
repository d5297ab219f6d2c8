/**
 * TypeScript shapes of the `csi.v1` messages the driver reads and writes, as produced by
 * @grpc/proto-loader with the options in proto.ts: field names as in the .proto (keepCase),
 * enums as their names, int64 as JavaScript numbers, unset scalars/maps/repeateds filled with
 * defaults, unset messages as null, and a virtual string field naming the set member of a oneof.
 */
export type StringMap = Record<string, string>;

export type AccessModeName =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

export type AccessType = 'mount' | 'block';

export interface VolumeCapability {
  block?: Record<string, never> | null;
  mount?: { fs_type: string; mount_flags: string[]; volume_mount_group: string } | null;
  access_type?: AccessType;
  access_mode: { mode: AccessModeName } | null;
}

export interface CapacityRange {
  required_bytes: number;
  limit_bytes: number;
}

export interface Volume {
  capacity_bytes: number;
  volume_id: string;
  volume_context: StringMap;
  accessible_topology: { segments: StringMap }[];
}

export interface VolumeStatus {
  published_node_ids: string[];
  volume_condition: { abnormal: boolean; message: string } | null;
}

export interface ControllerPublishVolumeRequest {
  volume_id: string;
  node_id: string;
  volume_capability: VolumeCapability | null;
  readonly: boolean;
  secrets: StringMap;
  volume_context: StringMap;
}

export interface CreateVolumeRequest {
  name: string;
  capacity_range: CapacityRange | null;
  volume_capabilities: VolumeCapability[];
  parameters: StringMap;
  secrets: StringMap;
  volume_content_source: { type?: 'snapshot' | 'volume' } | null;
  accessibility_requirements: { requisite: { segments: StringMap }[]; preferred: { segments: StringMap }[] } | null;
  mutable_parameters: StringMap;
}

export interface CreateVolumeResponse {
  volume: Volume;
}

export interface DeleteVolumeRequest {
  volume_id: string;
  secrets: StringMap;
}

export interface ValidateVolumeCapabilitiesRequest {
  volume_id: string;
  volume_context: StringMap;
  volume_capabilities: VolumeCapability[];
  parameters: StringMap;
  secrets: StringMap;
  mutable_parameters: StringMap;
}

export interface ValidateVolumeCapabilitiesResponse {
  confirmed: {
    volume_context: StringMap;
    volume_capabilities: VolumeCapability[];
    parameters: StringMap;
    mutable_parameters: StringMap;
  } | null;
  message: string;
}

export interface GetCapacityRequest {
  volume_capabilities: VolumeCapability[];
  parameters: StringMap;
  accessible_topology: { segments: StringMap } | null;
}

export interface GetCapacityResponse {
  available_capacity: number;
  maximum_volume_size: { value: number } | null;
  minimum_volume_size: { value: number } | null;
}

export interface ControllerExpandVolumeRequest {
  volume_id: string;
  capacity_range: CapacityRange | null;
  secrets: StringMap;
  volume_capability: VolumeCapability | null;
}

export interface ControllerExpandVolumeResponse {
  capacity_bytes: number;
  node_expansion_required: boolean;
}

export interface ControllerUnpublishVolumeRequest {
  volume_id: string;
  node_id: string;
  secrets: StringMap;
}

export interface ListVolumesRequest {
  max_entries: number;
  starting_token: string;
}

export interface ListVolumesResponse {
  entries: { volume: Volume; status: VolumeStatus }[];
  next_token: string;
}

export interface ControllerGetVolumeRequest {
  volume_id: string;
}

export interface ControllerGetVolumeResponse {
  volume: Volume;
  status: VolumeStatus;
}

export interface NodeStageVolumeRequest {
  volume_id: string;
  publish_context: StringMap;
  staging_target_path: string;
  volume_capability: VolumeCapability | null;
  secrets: StringMap;
  volume_context: StringMap;
}

export interface NodeUnstageVolumeRequest {
  volume_id: string;
  staging_target_path: string;
}

export interface NodePublishVolumeRequest {
  volume_id: string;
  publish_context: StringMap;
  staging_target_path: string;
  target_path: string;
  volume_capability: VolumeCapability | null;
  readonly: boolean;
  secrets: StringMap;
  volume_context: StringMap;
}

export interface NodeUnpublishVolumeRequest {
  volume_id: string;
  target_path: string;
}

export interface NodeGetVolumeStatsRequest {
  volume_id: string;
  volume_path: string;
  staging_target_path: string;
}

export interface VolumeUsage {
  available: number;
  total: number;
  used: number;
  unit: 'UNKNOWN' | 'BYTES' | 'INODES';
}

export interface NodeGetVolumeStatsResponse {
  usage: VolumeUsage[];
  volume_condition: { abnormal: boolean; message: string } | null;
}

export interface NodeExpandVolumeRequest {
  volume_id: string;
  volume_path: string;
  capacity_range: CapacityRange | null;
  staging_target_path: string;
  volume_capability: VolumeCapability | null;
  secrets: StringMap;
}

/** The RPC names the driver serves, by service (used by the call log and fault injection). */
export const CSI_METHODS = {
  Identity: ['GetPluginInfo', 'GetPluginCapabilities', 'Probe'],
  Controller: [
    'CreateVolume',
    'DeleteVolume',
    'ValidateVolumeCapabilities',
    'GetCapacity',
    'ControllerExpandVolume',
    'ControllerPublishVolume',
    'ControllerUnpublishVolume',
    'ListVolumes',
    'ControllerGetVolume',
    'ControllerGetCapabilities',
  ],
  Node: [
    'NodeStageVolume',
    'NodeUnstageVolume',
    'NodePublishVolume',
    'NodeUnpublishVolume',
    'NodeGetVolumeStats',
    'NodeExpandVolume',
    'NodeGetCapabilities',
    'NodeGetInfo',
  ],
} as const;

export type CsiService = keyof typeof CSI_METHODS;
export type CsiMethod = (typeof CSI_METHODS)[CsiService][number];

export const ALL_CSI_METHODS: readonly CsiMethod[] = [
  ...CSI_METHODS.Identity,
  ...CSI_METHODS.Controller,
  ...CSI_METHODS.Node,
];

export function isCsiMethod(name: string): name is CsiMethod {
  return (ALL_CSI_METHODS as readonly string[]).includes(name);
}
