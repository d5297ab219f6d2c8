/**
 * Loads the team-written CSI subset (`lib/csi-spec/csi.proto`) and the kubelet plugin
 * registration API (`lib/csi-spec/pluginregistration.proto`) by path with `@grpc/proto-loader`,
 * once per process. The .proto files are never copied: lib/csi-spec is the one source of truth
 * shared with the csi-loop test driver.
 *
 * Loader options (the repo-wide convention, see lib/csi-spec/README.md): snake_case field names,
 * int64 as numbers, enum values as names, defaults filled in, virtual `oneof` fields. The shapes
 * they produce are typed in csi-types.ts.
 */
import { fileURLToPath } from 'node:url';
import type { MethodDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';

export const CSI_PROTO_PATH = fileURLToPath(new URL('../../csi-spec/csi.proto', import.meta.url));
export const PLUGIN_REGISTRATION_PROTO_PATH = fileURLToPath(new URL('../../csi-spec/pluginregistration.proto', import.meta.url));

export const PROTO_LOADER_OPTIONS: Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

/** Every CSI RPC the client calls, with its service. */
export const CSI_METHODS = {
  GetPluginInfo: 'csi.v1.Identity',
  GetPluginCapabilities: 'csi.v1.Identity',
  Probe: 'csi.v1.Identity',
  ControllerPublishVolume: 'csi.v1.Controller',
  ControllerUnpublishVolume: 'csi.v1.Controller',
  ListVolumes: 'csi.v1.Controller',
  ControllerGetCapabilities: 'csi.v1.Controller',
  ControllerGetVolume: 'csi.v1.Controller',
  NodeStageVolume: 'csi.v1.Node',
  NodeUnstageVolume: 'csi.v1.Node',
  NodePublishVolume: 'csi.v1.Node',
  NodeUnpublishVolume: 'csi.v1.Node',
  NodeGetVolumeStats: 'csi.v1.Node',
  NodeExpandVolume: 'csi.v1.Node',
  NodeGetCapabilities: 'csi.v1.Node',
  NodeGetInfo: 'csi.v1.Node',
} as const;

export type CsiMethod = keyof typeof CSI_METHODS;

/** The plugin registration RPCs (wire service `/pluginregistration.Registration/...`). */
export const REGISTRATION_METHODS = {
  GetInfo: 'pluginregistration.Registration',
  NotifyRegistrationStatus: 'pluginregistration.Registration',
} as const;

export type RegistrationMethod = keyof typeof REGISTRATION_METHODS;

let loaded: PackageDefinition | undefined;

function definitions(): PackageDefinition {
  loaded ??= loadSync([CSI_PROTO_PATH, PLUGIN_REGISTRATION_PROTO_PATH], PROTO_LOADER_OPTIONS);
  return loaded;
}

/** Method definitions looked up so far, by `service/method` (every call of a client asks again). */
const methods = new Map<string, MethodDefinition<object, unknown>>();

/** The grpc-js method definition (path, serializers) of `service/method`; throws if the protos lack it. */
export function methodDefinition(service: string, method: string): MethodDefinition<object, unknown> {
  const key = `${service}/${method}`;
  const known = methods.get(key);
  if (known !== undefined) return known;
  const def = definitions()[service];
  // Message and enum definitions carry a `format` field; service definitions are method maps.
  if (def === undefined || 'format' in def) throw new Error(`service ${service} is not declared in the CSI protos`);
  const m = (def as Record<string, MethodDefinition<object, unknown> | undefined>)[method];
  if (m === undefined) throw new Error(`method ${service}/${method} is not declared in the CSI protos`);
  methods.set(key, m);
  return m;
}
