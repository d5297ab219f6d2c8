/**
 * A CSI client for tests: real grpc-js clients over the driver's unix socket, built from the same
 * .proto files but loaded here independently of the driver's own loader (so a wrong option on
 * either side shows up as a failing test). Plus small helpers for the control API.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const LIB_SPEC = fileURLToPath(new URL('../../lib/csi-spec/', import.meta.url));
const PROTOS = [
  `${LIB_SPEC}csi.proto`,
  `${LIB_SPEC}pluginregistration.proto`,
  fileURLToPath(new URL('./csi-provisioning.proto', import.meta.url)),
];

const definitions = loadSync(PROTOS, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [LIB_SPEC] });

type ServiceName = 'csi.v1.Identity' | 'csi.v1.Controller' | 'csi.v1.Node' | 'pluginregistration.Registration';

/** A failed call: the gRPC status code and details. */
export interface CallError extends Error {
  code: number;
  details: string;
}

export class CsiTestClient {
  private readonly clients = new Map<ServiceName, grpc.Client>();

  constructor(private readonly target: string) {}

  /** Calls `service/method` with `request`; rejects with the ServiceError on a non-OK status. */
  call<Res = Record<string, unknown>>(service: ServiceName, method: string, request: object = {}, deadlineMs = 5000): Promise<Res> {
    const def = definitions[service] as grpc.ServiceDefinition | undefined;
    // csi-provisioning.proto declares the Controller RPCs that lib/csi-spec/csi.proto lacks in a
    // service of its own; on the wire they are csi.v1.Controller methods.
    const extra = service === 'csi.v1.Controller' ? (definitions['csi.v1.ControllerProvisioning'] as grpc.ServiceDefinition | undefined) : undefined;
    const methodDef = def?.[method] ?? extra?.[method];
    if (methodDef === undefined) {
      return Promise.reject(new Error(`no method ${service}/${method}`));
    }
    const client = this.client(service);
    return new Promise((resolve, reject) => {
      client.makeUnaryRequest(
        `/${service}/${method}`,
        methodDef.requestSerialize,
        methodDef.responseDeserialize,
        request,
        new grpc.Metadata(),
        { deadline: new Date(new Date().getTime() + deadlineMs) },
        (err, value) => {
          if (err !== null) {
            reject(err);
          } else {
            resolve(value as Res);
          }
        },
      );
    });
  }

  identity<Res = Record<string, unknown>>(method: string, request: object = {}): Promise<Res> {
    return this.call<Res>('csi.v1.Identity', method, request);
  }

  controller<Res = Record<string, unknown>>(method: string, request: object = {}, deadlineMs?: number): Promise<Res> {
    return this.call<Res>('csi.v1.Controller', method, request, deadlineMs);
  }

  node<Res = Record<string, unknown>>(method: string, request: object = {}, deadlineMs?: number): Promise<Res> {
    return this.call<Res>('csi.v1.Node', method, request, deadlineMs);
  }

  close(): void {
    for (const client of this.clients.values()) {
      client.close();
    }
    this.clients.clear();
  }

  private client(service: ServiceName): grpc.Client {
    let client = this.clients.get(service);
    if (client === undefined) {
      client = new grpc.Client(this.target, grpc.credentials.createInsecure());
      this.clients.set(service, client);
    }
    return client;
  }
}

/** The status code of a rejected call (fails the test if the value is not a gRPC error). */
export async function codeOf(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as Partial<CallError>;
    if (typeof e.code === 'number') {
      return { code: e.code, details: e.details ?? '' };
    }
    throw err;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** JSON request against the control endpoint; returns status and parsed body. */
export async function control(port: number, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as unknown };
}
