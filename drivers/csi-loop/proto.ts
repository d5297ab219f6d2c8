/**
 * Loads the CSI and plugin-registration .proto files from lib/csi-spec/ (read by path; the driver
 * imports no project code) with @grpc/proto-loader.
 *
 * Loader options, which fix the JavaScript shape of every message (see csi-types.ts):
 * - keepCase: field names stay snake_case as in the .proto (`volume_id`, `target_path`);
 * - longs: Number: int64 fields (capacities, byte counts) are plain numbers. Every value the
 *   driver handles is far below 2^53, and grpc-js accepts numbers for int64 on encode;
 * - enums: String: enum values are their names ("SINGLE_NODE_WRITER", "BYTES");
 * - defaults: unset scalars, maps and repeated fields read as their defaults, unset messages as null;
 * - oneofs: a virtual field names the member that is set (`volume_capability.access_type`).
 */
import { fileURLToPath } from 'node:url';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';
import type { ServiceDefinition } from '@grpc/grpc-js';

export const CSI_PROTO_PATH = fileURLToPath(new URL('../../lib/csi-spec/csi.proto', import.meta.url));
export const REGISTRATION_PROTO_PATH = fileURLToPath(
  new URL('../../lib/csi-spec/pluginregistration.proto', import.meta.url),
);

export const PROTO_LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

let cached: PackageDefinition | undefined;

/** The package definition of both protos, loaded once per process. */
export function loadProtos(): PackageDefinition {
  cached ??= loadSync([CSI_PROTO_PATH, REGISTRATION_PROTO_PATH], PROTO_LOADER_OPTIONS);
  return cached;
}

/** The service definition of a fully qualified service name such as "csi.v1.Node". */
export function serviceDefinition(name: string): ServiceDefinition {
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
