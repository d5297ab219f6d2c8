/**
 * Loads the CSI and plugin-registration .proto files from lib/csi-spec/ (read by path; the driver
 * imports no project code) and the driver's own csi-provisioning.proto (the Controller RPCs the
 * lib subset leaves out) with @grpc/proto-loader.
 *
 * Loader options, which fix the JavaScript shape of every message (see csi-types.ts):
 * - keepCase: field names stay snake_case as in the .proto (`volume_id`, `target_path`);
 * - longs: Number: int64 fields (capacities, byte counts) are plain numbers. Every value the
 *   driver handles is far below 2^53, and grpc-js accepts numbers for int64 on encode;
 * - enums: String: enum values are their names ("SINGLE_NODE_WRITER", "BYTES");
 * - defaults: unset scalars, maps and repeated fields read as their defaults, unset messages as null;
 * - oneofs: a virtual field names the member that is set (`volume_capability.access_type`).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';
import type { ServiceDefinition } from '@grpc/grpc-js';

export const CSI_PROTO_PATH = fileURLToPath(new URL('../../lib/csi-spec/csi.proto', import.meta.url));
export const REGISTRATION_PROTO_PATH = fileURLToPath(
  new URL('../../lib/csi-spec/pluginregistration.proto', import.meta.url),
);

/** CreateVolume, DeleteVolume, ValidateVolumeCapabilities, GetCapacity, ControllerExpandVolume. */
export const PROVISIONING_PROTO_PATH = fileURLToPath(new URL('./csi-provisioning.proto', import.meta.url));

/** The service csi-provisioning.proto declares its RPCs in; they are served as csi.v1.Controller methods. */
const PROVISIONING_SERVICE = 'csi.v1.ControllerProvisioning';
const CONTROLLER_SERVICE = 'csi.v1.Controller';

export const PROTO_LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  // csi-provisioning.proto imports "csi.proto" (the shared messages) from here.
  includeDirs: [path.dirname(CSI_PROTO_PATH)],
};

let cached: PackageDefinition | undefined;

/** The package definition of both protos, loaded once per process. */
export function loadProtos(): PackageDefinition {
  cached ??= loadSync([CSI_PROTO_PATH, REGISTRATION_PROTO_PATH, PROVISIONING_PROTO_PATH], PROTO_LOADER_OPTIONS);
  return cached;
}

/**
 * The service definition of a fully qualified service name such as "csi.v1.Node". For
 * "csi.v1.Controller" it includes the RPCs of csi-provisioning.proto, under their upstream wire
 * paths (`/csi.v1.Controller/CreateVolume`, …).
 */
export function serviceDefinition(name: string): ServiceDefinition {
  const def = lookupService(name);
  return name === CONTROLLER_SERVICE ? { ...def, ...asMethodsOf(lookupService(PROVISIONING_SERVICE), CONTROLLER_SERVICE) } : def;
}

/** The methods of `def` with their paths moved to `service` (`/<service>/<Method>`). */
function asMethodsOf(def: ServiceDefinition, service: string): ServiceDefinition {
  return Object.fromEntries(Object.entries(def).map(([method, m]) => [method, { ...m, path: `/${service}/${method}` }]));
}

function lookupService(name: string): ServiceDefinition {
  const def = loadProtos()[name];
  if (def === undefined || !isServiceDefinition(def)) {
    throw new Error(`service ${name} not found in the CSI protos`);
  }
  return def;
}

function isServiceDefinition(value: object): value is ServiceDefinition {
  // Message and enum definitions carry a `format` field; service definitions are method maps.
  return !('format' in value);
}
