/**
 * Serves the CSI services over gRPC. Every call goes through one wrapper that, in order:
 * 1. takes a call-log sequence number;
 * 2. for mutating calls on a volume, takes the per-volume lock (busy → ABORTED);
 * 3. applies an injected fault, if any (delay, then hang or fail);
 * 4. runs the CsiLoopService method (Controller and Node calls inside StateStore.exclusive: on
 *    the state as it is on disk, with the state dir's lock, since other csi-loop processes may
 *    share it; but the ones that answer constants, like Identity's, without waiting for it);
 * 5. answers, releases the lock, appends to the call log and writes one JSON log line
 *    (request with secrets redacted).
 * A hanging call never answers; it ends when its caller cancels (e.g. the deadline passes) or
 * the driver shuts down, and only then releases its volume lock.
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { CallLog } from './call-log.ts';
import { Code, CsiError, errorText, isCsiError, statusName } from './csi-error.ts';
import type { CsiLoopService } from './csi-service.ts';
import type * as T from './csi-types.ts';
import type { CsiMethod } from './csi-types.ts';
import type { FaultRegistry } from './faults.ts';
import type { StateStore } from './state-store.ts';
import { serviceDefinition } from './proto.ts';
import { redactSecrets } from './redact.ts';
import { operationExistsMessage, type VolumeLocks } from './volume-locks.ts';

/** Calls that change a volume and therefore take its lock. Reads (stats, get, list) do not. */
const LOCKED_METHODS: ReadonlySet<CsiMethod> = new Set<CsiMethod>([
  'CreateVolume',
  'DeleteVolume',
  'ControllerExpandVolume',
  'ControllerPublishVolume',
  'ControllerUnpublishVolume',
  'NodeStageVolume',
  'NodeUnstageVolume',
  'NodePublishVolume',
  'NodeUnpublishVolume',
  'NodeExpandVolume',
]);

/**
 * Controller and Node calls that never look at the state (capabilities, node info): answered
 * without waiting for the state lock, as a real driver answers them while other calls run. The
 * kubelet asks NodeGetCapabilities in every mount and unmount, so queueing it behind the state
 * changes doubled every operation's wait at a restart.
 */
const STATELESS_METHODS: ReadonlySet<CsiMethod> = new Set<CsiMethod>(['ControllerGetCapabilities', 'NodeGetCapabilities', 'NodeGetInfo']);

export interface CallContext {
  service: CsiLoopService;
  store: StateStore;
  faults: FaultRegistry;
  callLog: CallLog;
  locks: VolumeLocks;
  logger: Logger;
  /** Whether a successful call gets a log line (failed calls always do). */
  logSuccessfulCalls: boolean;
  /** Aborted when the driver shuts down; ends hanging calls. */
  shutdown: AbortSignal;
}

/** A cancel this close to the call's deadline is logged as DEADLINE_EXCEEDED. */
const DEADLINE_TOLERANCE_MS = 250;

type Impl = (request: never) => Promise<object> | object;

/** Creates the gRPC server with Identity, Controller and Node registered (not yet bound). */
export function createCsiServer(ctx: CallContext): grpc.Server {
  const s = ctx.service;
  const impls: Record<'Identity' | 'Controller' | 'Node', Partial<Record<CsiMethod, Impl>>> = {
    Identity: {
      GetPluginInfo: () => s.getPluginInfo(),
      GetPluginCapabilities: () => s.getPluginCapabilities(),
      Probe: () => s.probe(),
    },
    Controller: {
      CreateVolume: (r: T.CreateVolumeRequest) => s.createVolume(r),
      DeleteVolume: (r: T.DeleteVolumeRequest) => s.deleteVolume(r),
      ValidateVolumeCapabilities: (r: T.ValidateVolumeCapabilitiesRequest) => s.validateVolumeCapabilities(r),
      GetCapacity: (r: T.GetCapacityRequest) => s.getCapacity(r),
      ControllerExpandVolume: (r: T.ControllerExpandVolumeRequest) => s.controllerExpandVolume(r),
      ControllerPublishVolume: (r: T.ControllerPublishVolumeRequest) => s.controllerPublishVolume(r),
      ControllerUnpublishVolume: (r: T.ControllerUnpublishVolumeRequest) => s.controllerUnpublishVolume(r),
      ListVolumes: (r: T.ListVolumesRequest) => s.listVolumes(r),
      ControllerGetVolume: (r: T.ControllerGetVolumeRequest) => s.controllerGetVolume(r),
      ControllerGetCapabilities: () => s.controllerGetCapabilities(),
    },
    Node: {
      NodeStageVolume: (r: T.NodeStageVolumeRequest) => s.nodeStageVolume(r),
      NodeUnstageVolume: (r: T.NodeUnstageVolumeRequest) => s.nodeUnstageVolume(r),
      NodePublishVolume: (r: T.NodePublishVolumeRequest) => s.nodePublishVolume(r),
      NodeUnpublishVolume: (r: T.NodeUnpublishVolumeRequest) => s.nodeUnpublishVolume(r),
      NodeGetVolumeStats: (r: T.NodeGetVolumeStatsRequest) => s.nodeGetVolumeStats(r),
      NodeExpandVolume: (r: T.NodeExpandVolumeRequest) => s.nodeExpandVolume(r),
      NodeGetCapabilities: () => s.nodeGetCapabilities(),
      NodeGetInfo: () => s.nodeGetInfo(),
    },
  };

  const server = new grpc.Server();
  for (const [serviceName, methods] of Object.entries(impls)) {
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [method, impl] of Object.entries(methods)) {
      const handler: grpc.handleUnaryCall<unknown, object> = (call, callback) => {
        const stateless = serviceName === 'Identity' || STATELESS_METHODS.has(method as CsiMethod);
        const run: Impl = stateless ? impl : (request) => ctx.store.exclusive(() => impl(request));
        void serveCall(ctx, method as CsiMethod, run, call, callback);
      };
      handlers[method] = handler;
    }
    server.addService(serviceDefinition(`csi.v1.${serviceName}`), handlers);
  }
  return server;
}

interface Outcome {
  code: number;
  message?: string;
  response?: object;
  /** The caller went away before an answer; nothing is sent. */
  abandoned?: boolean;
}

async function serveCall(
  ctx: CallContext,
  method: CsiMethod,
  impl: Impl,
  call: grpc.ServerUnaryCall<unknown, object>,
  callback: grpc.sendUnaryData<object>,
): Promise<void> {
  const seq = ctx.callLog.nextSeq();
  const time = new Date().toISOString();
  const started = performance.now();
  const request = (call.request ?? {}) as Record<string, unknown>;
  // CreateVolume names the volume it makes: its name is the volume id (csi-service.ts).
  const volumeId = stringField(request, method === 'CreateVolume' ? 'name' : 'volume_id');
  const lockKey = volumeId !== undefined && LOCKED_METHODS.has(method) ? volumeId : undefined;

  let outcome: Outcome;
  let locked = false;
  try {
    if (lockKey !== undefined) {
      locked = ctx.locks.tryAcquire(lockKey);
      if (!locked) {
        throw new CsiError(Code.ABORTED, operationExistsMessage(lockKey));
      }
    }
    outcome = await applyFault(ctx, method, call);
    if (outcome.code === Code.OK && outcome.abandoned !== true) {
      outcome = { code: Code.OK, response: await impl(request as never) };
    }
  } catch (err) {
    outcome = isCsiError(err)
      ? { code: err.code, message: err.message }
      : { code: Code.INTERNAL, message: errorText(err) };
  } finally {
    if (locked && lockKey !== undefined) {
      ctx.locks.release(lockKey);
    }
  }

  if (outcome.abandoned !== true) {
    if (outcome.code === Code.OK) {
      callback(null, outcome.response ?? {});
    } else {
      const message = outcome.message ?? statusName(outcome.code);
      callback(Object.assign(new Error(message), { code: outcome.code, details: message }), null);
    }
  }

  const durationMs = Math.round((performance.now() - started) * 10) / 10;
  const codeName = statusName(outcome.code);
  ctx.callLog.add({
    seq,
    time,
    method,
    ...(volumeId !== undefined ? { volumeId } : {}),
    ...optional('targetPath', stringField(request, 'target_path')),
    ...optional('stagingPath', stringField(request, 'staging_target_path')),
    code: codeName,
    ...optional('message', outcome.message),
    durationMs,
  });
  if (outcome.code === Code.OK && !ctx.logSuccessfulCalls) return;
  const line = { seq, method, volumeId, code: codeName, durationMs, request: redactSecrets(request) };
  if (outcome.code === Code.OK) {
    ctx.logger.info(line, 'csi call');
  } else {
    ctx.logger.warn({ ...line, error: outcome.message }, 'csi call failed');
  }
}

/** Delays, fails or hangs the call as injected. OK = proceed to the real implementation. */
async function applyFault(
  ctx: CallContext,
  method: CsiMethod,
  call: grpc.ServerUnaryCall<unknown, object>,
): Promise<Outcome> {
  const fault = ctx.faults.take(method);
  if (fault === undefined) {
    return { code: Code.OK };
  }
  if (fault.delayMs > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, fault.delayMs);
      ctx.shutdown.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }
  if (fault.hang) {
    await untilCancelled(call, ctx.shutdown);
    if (!call.cancelled && ctx.shutdown.aborted) {
      return { code: Code.UNAVAILABLE, message: 'csi-loop driver is shutting down' };
    }
    // The caller's cancel at its deadline arrives slightly before the server-side copy of the
    // deadline (which was computed on receipt), hence the tolerance.
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
    const expired = Number.isFinite(deadlineMs) && deadlineMs - new Date().getTime() < DEADLINE_TOLERANCE_MS;
    return {
      code: expired ? Code.DEADLINE_EXCEEDED : Code.CANCELLED,
      message: 'injected hang: the caller gave up',
      abandoned: true,
    };
  }
  if (fault.code !== Code.OK) {
    return { code: fault.code, message: fault.message ?? `injected fault: ${fault.codeName}` };
  }
  return { code: Code.OK };
}

function untilCancelled(call: grpc.ServerUnaryCall<unknown, object>, shutdown: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (call.cancelled || shutdown.aborted) {
      resolve();
      return;
    }
    call.once('cancelled', () => {
      resolve();
    });
    shutdown.addEventListener('abort', () => {
      resolve();
    }, { once: true });
  });
}

function stringField(request: Record<string, unknown>, name: string): string | undefined {
  const value = request[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}
