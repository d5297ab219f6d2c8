/**
 * An in-process gRPC server on a unix socket that answers CSI and plugin-registration calls with
 * handlers a test gives, for drivers that misbehave in ways the csi-loop driver cannot (a
 * ListVolumes whose next_token never ends, a megabyte of error details, a second registration
 * under a taken name). Tests only. Methods without a handler answer UNIMPLEMENTED.
 */
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { CSI_METHODS, CSI_PROTO_PATH, PLUGIN_REGISTRATION_PROTO_PATH, PROTO_LOADER_OPTIONS, REGISTRATION_METHODS, type CsiMethod, type RegistrationMethod } from '../csi-proto.ts';
import { errorMessage } from '../../errors.ts';

export type FakeMethod = CsiMethod | RegistrationMethod;

/** Answers one call: resolves with the response, or throws a {@link FakeStatus}. */
export type FakeHandler = (request: Record<string, unknown>) => object | Promise<object>;

/** A gRPC status a handler throws to fail its call. */
export class FakeStatus extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
  ) {
    super(details);
  }
}

const SERVICES: Record<string, FakeMethod[]> = {};
for (const [method, service] of [...Object.entries(CSI_METHODS), ...Object.entries(REGISTRATION_METHODS)]) {
  (SERVICES[service] ??= []).push(method as FakeMethod);
}

export class FakeCsiServer {
  /** Every call, in order. */
  readonly calls: { method: FakeMethod; request: Record<string, unknown> }[] = [];

  private constructor(
    private readonly server: grpc.Server,
    readonly socketPath: string,
  ) {}

  /** The `unix://` endpoint. */
  get endpoint(): string {
    return `unix://${this.socketPath}`;
  }

  static async start(socketPath: string, handlers: Partial<Record<FakeMethod, FakeHandler>>): Promise<FakeCsiServer> {
    const definitions = loadSync([CSI_PROTO_PATH, PLUGIN_REGISTRATION_PROTO_PATH], PROTO_LOADER_OPTIONS);
    const server = new grpc.Server();
    const fake = new FakeCsiServer(server, socketPath);
    for (const [service, methods] of Object.entries(SERVICES)) {
      const definition = definitions[service] as grpc.ServiceDefinition;
      const impl: grpc.UntypedServiceImplementation = {};
      for (const method of methods) {
        impl[method] = (call: grpc.ServerUnaryCall<Record<string, unknown>, object>, callback: grpc.sendUnaryData<object>) => {
          fake.calls.push({ method, request: call.request });
          const handler = handlers[method];
          if (handler === undefined) {
            callback({ code: grpc.status.UNIMPLEMENTED, details: `${method} is not implemented by the fake driver` });
            return;
          }
          Promise.resolve()
            .then(() => handler(call.request))
            .then(
              (response) => {
                callback(null, response);
              },
              (err: unknown) => {
                if (err instanceof FakeStatus) callback({ code: err.code, details: err.details });
                else callback({ code: grpc.status.INTERNAL, details: errorMessage(err) });
              },
            );
        };
      }
      server.addService(definition, impl);
    }
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => {
        if (err === null) resolve();
        else reject(err);
      });
    });
    return fake;
  }

  /** Calls of one method. */
  callsOf(method: FakeMethod): Record<string, unknown>[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  /** Stops at once (calls in flight are cancelled) and removes the socket. */
  stop(): Promise<void> {
    this.server.forceShutdown();
    return Promise.resolve();
  }
}

/** Handlers for a CSI driver `name` that completes the registry's handshake (node service only). */
export function handshakeHandlers(name: string, nodeId: string): Partial<Record<FakeMethod, FakeHandler>> {
  return {
    GetPluginInfo: () => ({ name, vendor_version: '1.0.0' }),
    GetPluginCapabilities: () => ({ capabilities: [] }),
    Probe: () => ({ ready: { value: true } }),
    NodeGetInfo: () => ({ node_id: nodeId, max_volumes_per_node: 0 }),
    NodeGetCapabilities: () => ({ capabilities: [] }),
  };
}

/** Handlers of a registration socket announcing CSI driver `name` served at `endpoint` ('' = this socket). */
export function registrationHandlers(name: string, endpoint = ''): Partial<Record<FakeMethod, FakeHandler>> {
  return {
    GetInfo: () => ({ type: 'CSIPlugin', name, endpoint, supported_versions: ['1.0.0'] }),
    NotifyRegistrationStatus: () => ({}),
  };
}
