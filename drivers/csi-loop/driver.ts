/**
 * Assembles and runs one csi-loop driver: state, backend, the CSI gRPC server on a unix socket,
 * the optional control HTTP server and the optional plugin-registration socket.
 * main.ts uses it for the CLI; tests start drivers in-process with it.
 */
import { promises as fs } from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import type { VolumeBackend } from './backend.ts';
import { CallLog } from './call-log.ts';
import { startControlServer } from './control-server.ts';
import { CsiLoopService, VENDOR_VERSION } from './csi-service.ts';
import { FaultRegistry } from './faults.ts';
import { createCsiServer } from './grpc-server.ts';
import { lstatOrNull } from './host-tools.ts';
import type { LogCalls } from './args.ts';
import { resolveMode, type RequestedMode } from './mode.ts';
import { PrivilegedBackend } from './privileged-backend.ts';
import { createRegistrationServer, registrationSocketPath, type RegistrationStatus } from './registration-server.ts';
import { StateStore, type DriverMode } from './state-store.ts';
import { UnprivilegedBackend } from './unprivileged-backend.ts';
import { VolumeLocks } from './volume-locks.ts';

export const DEFAULT_DRIVER_NAME = 'csi-loop.volumescope.dev';

export interface DriverOptions {
  /** Path of the CSI unix socket (the `unix://` prefix already removed). */
  socketPath: string;
  stateDir: string;
  driverName: string;
  nodeId: string;
  mode: RequestedMode;
  /** Control endpoint port on 127.0.0.1 (0 = any free port); undefined = no control endpoint. */
  controlPort?: number;
  registrationDir?: string;
  /**
   * Spec-strict identities (`--strict`): ControllerPublishVolume creates no volume on demand and
   * answers NOT_FOUND for an unknown volume or a node other than `nodeId` (what csi-sanity checks).
   */
  strict?: boolean;
  /** `failed`: successful CSI calls get no log line (default `all`). */
  logCalls?: LogCalls;
  /** Where the JSON log lines go (default: stderr). */
  logger?: Logger;
}

export interface RunningDriver {
  readonly mode: DriverMode;
  readonly socketPath: string;
  /** `unix://<socketPath>`, the gRPC target for clients. */
  readonly endpoint: string;
  /** Bound control port, or undefined without a control endpoint. */
  readonly controlPort: number | undefined;
  readonly registrationSocketPath: string | undefined;
  /** Stops all servers (hanging calls are released), removes the sockets. Idempotent. */
  close(): Promise<void>;
}

export async function startCsiLoopDriver(options: DriverOptions): Promise<RunningDriver> {
  const logger = options.logger ?? pino({ base: { driver: options.driverName } }, pino.destination(2));
  const stateDir = path.resolve(options.stateDir);
  await fs.mkdir(stateDir, { recursive: true });
  const decision = await resolveMode(options.mode, stateDir);
  const mode = decision.mode;
  // Always said, with the reason: an unexpected unprivileged driver is otherwise hard to explain.
  logger.info({ version: VENDOR_VERSION, mode, requestedMode: decision.requested, reason: decision.reason }, `csi-loop ${VENDOR_VERSION} runs in ${mode} mode: ${decision.reason}`);
  const backend: VolumeBackend = mode === 'privileged' ? new PrivilegedBackend(stateDir) : new UnprivilegedBackend(stateDir);
  const store = await StateStore.open(stateDir, mode, options.nodeId);
  const service = new CsiLoopService({
    driverName: options.driverName,
    nodeId: options.nodeId,
    store,
    backend,
    stateDir,
    strict: options.strict ?? false,
  });
  const faults = new FaultRegistry();
  const callLog = new CallLog();
  const locks = new VolumeLocks();
  const shutdown = new AbortController();
  const socketPath = path.resolve(options.socketPath);
  let registration: RegistrationStatus | null = null;

  const csiServer = createCsiServer({ service, store, faults, callLog, locks, logger, logSuccessfulCalls: (options.logCalls ?? 'all') === 'all', shutdown: shutdown.signal });
  await bindUnix(csiServer, socketPath);

  let regServer: grpc.Server | undefined;
  let regSocket: string | undefined;
  if (options.registrationDir !== undefined) {
    await fs.mkdir(options.registrationDir, { recursive: true });
    regSocket = path.resolve(registrationSocketPath(options.registrationDir, options.driverName));
    regServer = createRegistrationServer({
      driverName: options.driverName,
      csiSocketPath: socketPath,
      logger,
      onStatus: (status) => {
        registration = status;
      },
    });
    await bindUnix(regServer, regSocket);
  }

  let control: { server: http.Server; port: number } | undefined;
  if (options.controlPort !== undefined) {
    control = await startControlServer(
      {
        service,
        store,
        faults,
        callLog,
        locks,
        logger,
        describe: () => ({
          driverName: options.driverName,
          nodeId: options.nodeId,
          endpoint: `unix://${socketPath}`,
          registrationSocket: regSocket ?? null,
          registration,
          inFlight: locks.list(),
        }),
      },
      options.controlPort,
    );
  }

  logger.info(
    { mode, endpoint: `unix://${socketPath}`, stateDir, nodeId: options.nodeId, strict: options.strict ?? false, logCalls: options.logCalls ?? 'all', controlPort: control?.port, registrationSocket: regSocket },
    'csi-loop driver started',
  );

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shutdown.abort();
      await Promise.all([
        shutdownGrpc(csiServer),
        regServer === undefined ? Promise.resolve() : shutdownGrpc(regServer),
        control === undefined ? Promise.resolve() : closeHttp(control.server),
      ]);
      await removeSocket(socketPath);
      if (regSocket !== undefined) {
        await removeSocket(regSocket);
      }
      logger.info({ endpoint: `unix://${socketPath}` }, 'csi-loop driver stopped');
    })();
    return closing;
  };

  return {
    mode,
    socketPath,
    endpoint: `unix://${socketPath}`,
    controlPort: control?.port,
    registrationSocketPath: regSocket,
    close,
  };
}

async function bindUnix(server: grpc.Server, socketPath: string): Promise<void> {
  await fs.mkdir(path.dirname(socketPath), { recursive: true });
  await removeSocket(socketPath);
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => {
      if (err === null) {
        resolve();
      } else {
        reject(err);
      }
    });
  });
}

/** Removes a stale socket file; refuses to delete anything that is not a socket. */
async function removeSocket(socketPath: string): Promise<void> {
  const stat = await lstatOrNull(socketPath);
  if (stat === null) {
    return;
  }
  if (!stat.isSocket()) {
    throw new Error(`${socketPath} exists and is not a socket; not removing it`);
  }
  await fs.unlink(socketPath);
}

/** Graceful shutdown, forced after one second (hanging calls are abandoned by design). */
function shutdownGrpc(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 1000);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function closeHttp(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
    server.closeAllConnections();
  });
}
