/**
 * Loads the team-written CSI subset (`lib/csi-spec/csi.proto`) and the kubelet plugin
 * registration API (`lib/csi-spec/pluginregistration.proto`) by path with protobufjs, once per
 * process, and builds grpc-js method definitions for the methods called. The .proto files are
 * never copied: lib/csi-spec is the one source of truth shared with the csi-loop test driver.
 *
 * Loader options (the repo-wide convention, see lib/csi-spec/README.md): snake_case field names,
 * int64 as numbers, enum values as names, defaults filled in, virtual `oneof` fields. The shapes
 * they produce are typed in csi-types.ts. The (de)serialisers are those `@grpc/proto-loader`
 * builds with these options (`Type.fromObject` + `encode`; `decode` + `Type.toObject`), so the
 * test servers, which load the same files with proto-loader, see the same messages. The agent
 * does not use proto-loader itself: it also builds a reflection descriptor of every message and
 * file, which the agent never reads, and that was most of the CSI stack's cost in a restart
 * (about 20 ms of the main thread when a driver registers, bench:cluster --agent-cpu-prof).
 */
import { fileURLToPath } from 'node:url';
import type { MethodDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';

export const CSI_PROTO_PATH = fileURLToPath(new URL('../../csi-spec/csi.proto', import.meta.url));
export const PLUGIN_REGISTRATION_PROTO_PATH = fileURLToPath(new URL('../../csi-spec/pluginregistration.proto', import.meta.url));

/** The options of the repo-wide convention, in `@grpc/proto-loader`'s form (test servers load the protos with it). */
export const PROTO_LOADER_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true } as const;

/** The same conversion for `Type.toObject` (proto-loader passes its options through; keepCase applies when parsing). */
const { keepCase: PARSE_KEEP_CASE, ...TO_OBJECT_OPTIONS } = PROTO_LOADER_OPTIONS;

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

let loaded: protobuf.Root | undefined;

function root(): protobuf.Root {
  if (loaded === undefined) {
    const r = new protobuf.Root();
    r.loadSync([CSI_PROTO_PATH, PLUGIN_REGISTRATION_PROTO_PATH], { keepCase: PARSE_KEEP_CASE });
    r.resolveAll();
    loaded = r;
  }
  return loaded;
}

/** Method definitions built so far, by `service/method` (every call of a client asks again). */
const methods = new Map<string, MethodDefinition<object, unknown>>();

/** The grpc-js method definition (path, serializers) of `service/method`; throws if the protos lack it. */
export function methodDefinition(service: string, method: string): MethodDefinition<object, unknown> {
  const key = `${service}/${method}`;
  const known = methods.get(key);
  if (known !== undefined) return known;
  const def = root().lookup(service);
  if (!(def instanceof protobuf.Service)) throw new Error(`service ${service} is not declared in the CSI protos`);
  const m = def.methods[method];
  if (m === undefined) throw new Error(`method ${service}/${method} is not declared in the CSI protos`);
  const requestType = m.resolvedRequestType;
  const responseType = m.resolvedResponseType;
  if (requestType === null || responseType === null) throw new Error(`method ${service}/${method}: its message types are not resolved`);
  const built: MethodDefinition<object, unknown> = {
    path: `/${key}`,
    requestStream: m.requestStream === true,
    responseStream: m.responseStream === true,
    requestSerialize: serializer(requestType),
    requestDeserialize: deserializer(requestType),
    responseSerialize: serializer(responseType),
    responseDeserialize: deserializer(responseType),
    originalName: method.charAt(0).toLowerCase() + method.slice(1),
  };
  methods.set(key, built);
  return built;
}

/** `fromObject` then `encode`; an array is refused as proto-loader refuses it (fromObject would take it as an object). */
function serializer(type: protobuf.Type): (value: unknown) => Buffer {
  return (value) => {
    if (Array.isArray(value)) throw new Error(`Failed to serialize message: expected object with ${type.name} structure, got array instead`);
    const bytes = type.encode(type.fromObject(value as Record<string, unknown>)).finish();
    return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer(type: protobuf.Type): (bytes: Buffer) => object {
  return (bytes) => type.toObject(type.decode(bytes), TO_OBJECT_OPTIONS);
}
