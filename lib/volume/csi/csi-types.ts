/**
 * The JavaScript shapes of the CSI messages VolumeScope sends and receives, as
 * `@grpc/proto-loader` produces them from `lib/csi-spec/csi.proto` with the repo's loader
 * options (`keepCase`, `longs: Number`, `enums: String`, `defaults`, `oneofs`): field names stay
 * snake_case exactly as in the CSI specification, int64 values are numbers, enum values are their
 * names, unset messages read as `null` and a virtual field names the member set in a `oneof`.
 *
 * Requests list only what a caller sets; responses list every field the subset declares.
 */

/** `VolumeCapability.AccessMode.Mode`. */
export type CsiAccessMode =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

/** `NodeServiceCapability.RPC.Type`. */
export type NodeCapability =
  | 'UNKNOWN'
  | 'STAGE_UNSTAGE_VOLUME'
  | 'GET_VOLUME_STATS'
  | 'EXPAND_VOLUME'
  | 'VOLUME_CONDITION'
  | 'SINGLE_NODE_MULTI_WRITER'
  | 'VOLUME_MOUNT_GROUP';

/** `ControllerServiceCapability.RPC.Type`. */
export type ControllerCapability =
  | 'UNKNOWN'
  | 'CREATE_DELETE_VOLUME'
  | 'PUBLISH_UNPUBLISH_VOLUME'
  | 'LIST_VOLUMES'
  | 'GET_CAPACITY'
  | 'CREATE_DELETE_SNAPSHOT'
  | 'LIST_SNAPSHOTS'
  | 'CLONE_VOLUME'
  | 'PUBLISH_READONLY'
  | 'EXPAND_VOLUME'
  | 'LIST_VOLUMES_PUBLISHED_NODES'
  | 'VOLUME_CONDITION'
  | 'GET_VOLUME'
  | 'SINGLE_NODE_MULTI_WRITER';

/** `PluginCapability.Service.Type`. */
export type PluginServiceType = 'UNKNOWN' | 'CONTROLLER_SERVICE' | 'VOLUME_ACCESSIBILITY_CONSTRAINTS' | 'GROUP_CONTROLLER_SERVICE';

/** `PluginCapability.VolumeExpansion.Type`. */
export type PluginVolumeExpansionType = 'UNKNOWN' | 'ONLINE' | 'OFFLINE';

/** `map<string, string>` fields. */
export type StringMap = Record<string, string>;

/** `VolumeCapability` as sent: exactly one of `mount` / `block`. */
export interface VolumeCapability {
  mount?: { fs_type: string; mount_flags: string[]; volume_mount_group?: string };
  block?: Record<string, never>;
  access_mode: { mode: CsiAccessMode };
}

export interface CsiVolume {
  capacity_bytes: number;
  volume_id: string;
  volume_context: StringMap;
  accessible_topology: { segments: StringMap }[];
}

export interface VolumeCondition {
  abnormal: boolean;
  message: string;
}

/** `ListVolumesResponse.VolumeStatus` / `ControllerGetVolumeResponse.VolumeStatus`. */
export interface ControllerVolumeStatus {
  published_node_ids: string[];
  volume_condition: VolumeCondition | null;
}

// Identity

export interface GetPluginInfoResponse {
  name: string;
  vendor_version: string;
  manifest: StringMap;
}

export interface PluginCapability {
  type?: 'service' | 'volume_expansion';
  service?: { type: PluginServiceType } | null;
  volume_expansion?: { type: PluginVolumeExpansionType } | null;
}

export interface GetPluginCapabilitiesResponse {
  capabilities: PluginCapability[];
}

export interface ProbeResponse {
  /** `google.protobuf.BoolValue`: null when the plugin left it unset. */
  ready: { value: boolean } | null;
}

// Controller

export interface ControllerPublishVolumeRequest {
  volume_id: string;
  node_id: string;
  volume_capability: VolumeCapability;
  readonly: boolean;
  secrets?: StringMap;
  volume_context?: StringMap;
}

export interface ControllerPublishVolumeResponse {
  publish_context: StringMap;
}

export interface ControllerUnpublishVolumeRequest {
  volume_id: string;
  node_id: string;
  secrets?: StringMap;
}

export interface ListVolumesRequest {
  /** 0 = as many as the plugin wants to return. */
  max_entries?: number;
  starting_token?: string;
}

export interface ListVolumesResponse {
  entries: { volume: CsiVolume | null; status: ControllerVolumeStatus | null }[];
  next_token: string;
}

export interface ControllerGetVolumeResponse {
  volume: CsiVolume | null;
  status: ControllerVolumeStatus | null;
}

export interface RpcCapabilitiesResponse<T extends string> {
  capabilities: { type?: 'rpc'; rpc: { type: T } | null }[];
}

export type ControllerGetCapabilitiesResponse = RpcCapabilitiesResponse<ControllerCapability>;

// Node

export interface NodeStageVolumeRequest {
  volume_id: string;
  publish_context?: StringMap;
  staging_target_path: string;
  volume_capability: VolumeCapability;
  secrets?: StringMap;
  volume_context?: StringMap;
}

export interface NodeUnstageVolumeRequest {
  volume_id: string;
  staging_target_path: string;
}

export interface NodePublishVolumeRequest {
  volume_id: string;
  publish_context?: StringMap;
  /** Empty when the plugin does not stage. */
  staging_target_path?: string;
  target_path: string;
  volume_capability: VolumeCapability;
  readonly: boolean;
  secrets?: StringMap;
  volume_context?: StringMap;
}

export interface NodeUnpublishVolumeRequest {
  volume_id: string;
  target_path: string;
}

export interface NodeGetVolumeStatsRequest {
  volume_id: string;
  volume_path: string;
  staging_target_path?: string;
}

export interface VolumeUsage {
  available: number;
  total: number;
  used: number;
  unit: 'UNKNOWN' | 'BYTES' | 'INODES';
}

export interface NodeGetVolumeStatsResponse {
  usage: VolumeUsage[];
  volume_condition: VolumeCondition | null;
}

export interface NodeExpandVolumeRequest {
  volume_id: string;
  volume_path: string;
  capacity_range?: { required_bytes: number; limit_bytes?: number };
  staging_target_path?: string;
  volume_capability?: VolumeCapability;
  secrets?: StringMap;
}

export interface NodeExpandVolumeResponse {
  capacity_bytes: number;
}

export type NodeGetCapabilitiesResponse = RpcCapabilitiesResponse<NodeCapability>;

export interface NodeGetInfoResponse {
  node_id: string;
  max_volumes_per_node: number;
  accessible_topology: { segments: StringMap } | null;
}

// Plugin registration (pluginregistration.v1)

export interface PluginInfo {
  /** "CSIPlugin" or "DevicePlugin". */
  type: string;
  name: string;
  /** The plugin's own API socket; for CSI the CSI endpoint. Empty: the registration socket itself. */
  endpoint: string;
  supported_versions: string[];
}

export interface RegistrationStatus {
  plugin_registered: boolean;
  error: string;
}

/** The capability names of an RPC capability list, unknown entries dropped. */
export function rpcCapabilityTypes<T extends string>(response: RpcCapabilitiesResponse<T>): T[] {
  const out: T[] = [];
  for (const c of response.capabilities) {
    if (c.rpc !== null && c.rpc.type !== ('UNKNOWN' as T)) out.push(c.rpc.type);
  }
  return out;
}

/** Plugin capabilities as flat names: service types, and `VOLUME_EXPANSION_<type>`. */
export function pluginCapabilityNames(response: GetPluginCapabilitiesResponse): string[] {
  const out: string[] = [];
  for (const c of response.capabilities) {
    if (c.service != null && c.service.type !== 'UNKNOWN') out.push(c.service.type);
    if (c.volume_expansion != null && c.volume_expansion.type !== 'UNKNOWN') out.push(`VOLUME_EXPANSION_${c.volume_expansion.type}`);
  }
  return out;
}
