/**
 * The kubelet plugin-registration endpoint (what node-driver-registrar normally provides):
 * `pluginregistration.Registration` on `<registration-dir>/<driver-name>-reg.sock`. The kubelet's
 * plugin watcher finds the socket, calls GetInfo, then reports the result through
 * NotifyRegistrationStatus.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { serviceDefinition } from './proto.ts';

export const SUPPORTED_CSI_VERSIONS = ['1.0.0'];

export interface RegistrationStatus {
  pluginRegistered: boolean;
  error: string;
  time: string;
}

export interface RegistrationInfo {
  driverName: string;
  /** The CSI socket path (not a URL), as node-driver-registrar reports it. */
  csiSocketPath: string;
  logger: Logger;
  /** Receives every NotifyRegistrationStatus the kubelet sends. */
  onStatus: (status: RegistrationStatus) => void;
}

export function registrationSocketPath(registrationDir: string, driverName: string): string {
  return `${registrationDir.replace(/\/+$/, '')}/${driverName}-reg.sock`;
}

export function createRegistrationServer(info: RegistrationInfo): grpc.Server {
  const server = new grpc.Server();
  const getInfo: grpc.handleUnaryCall<unknown, object> = (_call, callback) => {
    info.logger.info({ method: 'GetInfo' }, 'plugin registration call');
    callback(null, {
      type: 'CSIPlugin',
      name: info.driverName,
      endpoint: info.csiSocketPath,
      supported_versions: SUPPORTED_CSI_VERSIONS,
    });
  };
  const notify: grpc.handleUnaryCall<unknown, object> = (call, callback) => {
    const request = call.request as { plugin_registered?: boolean; error?: string };
    const status: RegistrationStatus = {
      pluginRegistered: request.plugin_registered === true,
      error: request.error ?? '',
      time: new Date().toISOString(),
    };
    info.onStatus(status);
    info.logger.info({ method: 'NotifyRegistrationStatus', ...status }, 'plugin registration call');
    callback(null, {});
  };
  server.addService(serviceDefinition('pluginregistration.Registration'), {
    GetInfo: getInfo,
    NotifyRegistrationStatus: notify,
  });
  return server;
}
