/**
 * The CSI drivers known on this node (kubelet `csiDrivers` DriversStore plus the CSI
 * `RegistrationHandler`): which endpoint serves which driver name, the node id the driver
 * reported (NodeGetInfo), its capabilities, and the health of the last handshake or probe.
 *
 * Drivers arrive two ways:
 * - `--csi-driver <name>=<unix socket path>` (repeatable; {@link parseCsiDriverFlag} +
 *   {@link CsiDriverRegistry.addDriver}): the agent keeps trying until the handshake succeeds,
 *   with a doubling delay (500 ms up to 30 s by default) on its Clock;
 * - the plugin watcher (plugin-watcher.ts), which finds `<root-dir>/plugins_registry/*.sock`
 *   and calls {@link CsiDriverRegistry.registerPlugin} / {@link CsiDriverRegistry.deregisterPlugin}.
 *
 * A driver is *registered* once its handshake succeeded: GetPluginInfo (the name must match),
 * GetPluginCapabilities, Probe (ready must not be false), NodeGetInfo (a node id is required),
 * NodeGetCapabilities, and ControllerGetCapabilities when the plugin offers CONTROLLER_SERVICE.
 * Until then, and after deregistration, {@link CsiDriverRegistry.client} throws the kubelet's
 * transient error "driver name X not found in the list of registered CSI drivers"
 * (kubernetes#120268), so operations back off and recover on registration.
 *
 * Who holds a name (stricter than upstream, whose `validateVersions` lets any registration with
 * a higher version replace a live driver, so a hostile socket could take over a driver's volumes
 * by announcing 1.99):
 * - a `--csi-driver` name is the operator's: no registration socket can take it;
 * - a name registered from a socket belongs to that socket until the watcher sees it removed.
 *   The same socket may register again at any time (a retried handshake, a restarted driver at
 *   the same path), which replaces the entry;
 * - any other registration under a taken name is refused with a
 *   {@link CsiDriverRegistrationRefusedError}. The refusal is logged once, sent back to the
 *   plugin (NotifyRegistrationStatus) and shown on the holder's snapshot entry as `lastError`
 *   while the refused socket exists (unless the holder has an error of its own).
 * Registration names longer than 63 characters (more than a PV's `csi.driver` may have) are
 * refused too. A `--csi-driver` given after a registration took its name replaces it, with a
 * warning.
 */
import type { CsiNodeInfoManager } from './csi-node-info.ts';
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import { truncateMessage } from '../../truncate-message.ts';
import { errorMessage, TransientOperationFailure } from '../errors.ts';
import { discardLogger, type Logger } from '../logger.ts';
import { CsiClient, DEFAULT_CSI_TIMEOUT_MS, unixEndpoint, type CsiCallSample } from './csi-client.ts';
import {
  pluginCapabilityNames,
  rpcCapabilityTypes,
  type ControllerCapability,
  type NodeCapability,
} from './csi-types.ts';

/** How the driver became known. */
export type CsiDriverSource = 'flag' | 'plugin-watcher';

/**
 * One driver as the snapshot shows it (`drivers[]`). Empty/`null` fields mean "not known yet":
 * the driver never answered the handshake.
 */
export interface CsiDriverStatus {
  name: string;
  /** `unix:///path/to/csi.sock`. */
  endpoint: string;
  /** The handshake completed (NodeGetInfo included); volumes of this driver can be served. */
  registered: boolean;
  /** NodeGetInfo `node_id`; null until the driver answered. */
  nodeId: string | null;
  /** Node service capabilities (`STAGE_UNSTAGE_VOLUME`, …), as last reported. */
  capabilities: string[];
  /** Epoch ms of the last handshake or probe, successful or not; null if none ran. */
  lastProbeAt: number | null;
  /** The error of the last handshake or probe; null when it succeeded or none ran. */
  lastError: string | null;
}

/** {@link CsiDriverStatus} plus what the dashboard's driver panel may show. */
export interface CsiDriverDetails extends CsiDriverStatus {
  source: CsiDriverSource;
  controllerCapabilities: ControllerCapability[];
  /** Plugin capabilities: service types and `VOLUME_EXPANSION_ONLINE|OFFLINE`. */
  pluginCapabilities: string[];
  vendorVersion: string | null;
  /** NodeGetInfo `max_volumes_per_node` (0 = no limit); null until known. */
  maxVolumesPerNode: number | null;
}

/** The kubelet's transient "driver not registered" failure; a {@link TransientOperationFailure}. */
export class CsiDriverNotRegisteredError extends TransientOperationFailure {
  constructor(readonly driverName: string) {
    super(`driver name ${driverName} not found in the list of registered CSI drivers`);
  }
}

export function isCsiDriverNotRegisteredError(err: unknown): err is CsiDriverNotRegisteredError {
  return err instanceof CsiDriverNotRegisteredError;
}

/**
 * A registration refused because its driver name is taken (by `--csi-driver` or by another live
 * registration socket), or is too long to be a CSI driver name.
 */
export class CsiDriverRegistrationRefusedError extends Error {
  override readonly name = 'CsiDriverRegistrationRefusedError';
}

export function isCsiDriverRegistrationRefusedError(err: unknown): err is CsiDriverRegistrationRefusedError {
  return err instanceof CsiDriverRegistrationRefusedError;
}

/** Longest driver name a PV or inline volume may reference (the API's CSI driver name validation). */
const MAX_CSI_DRIVER_NAME_LENGTH = 63;

/** A `--csi-driver` value that is not `<name>=<unix socket path>`. */
export class InvalidCsiDriverFlagError extends Error {
  override readonly name = 'InvalidCsiDriverFlagError';
}

export function isInvalidCsiDriverFlagError(err: unknown): err is InvalidCsiDriverFlagError {
  return err instanceof InvalidCsiDriverFlagError;
}

/**
 * Parses one `--csi-driver` value, `<name>=<unix socket path>` (the path may also be given as
 * `unix:///path`). Returns the name and the `unix://` endpoint.
 */
export function parseCsiDriverFlag(value: string): { name: string; endpoint: string } {
  const eq = value.indexOf('=');
  const name = eq < 0 ? '' : value.slice(0, eq).trim();
  const path = eq < 0 ? '' : value.slice(eq + 1).trim();
  if (name === '' || path === '') {
    throw new InvalidCsiDriverFlagError(`--csi-driver ${JSON.stringify(value)}: expected <name>=<unix socket path>`);
  }
  try {
    return { name, endpoint: unixEndpoint(path) };
  } catch (err) {
    throw new InvalidCsiDriverFlagError(`--csi-driver ${JSON.stringify(value)}: ${(err as Error).message}`);
  }
}

export interface CsiDriverRegistryOptions {
  clock: Clock;
  logger?: Logger;
  /** Deadline of every CSI call made through this registry's clients; default 2 min. */
  callTimeoutMs?: number;
  /** First delay before a failed `--csi-driver` handshake is retried; default 500 ms. */
  retryInitialMs?: number;
  /** Cap of the doubling retry delay; default 30 s. */
  retryMaxMs?: number;
  /** When > 0, every registered driver is probed (Probe + NodeGetCapabilities) this often. Default 0 (off). */
  probeIntervalMs?: number;
  /** Publishes registered drivers to the API server (CSINode); none by default. See csi-node-info.ts. */
  nodeInfo?: CsiNodeInfoManager;
  /** Every finished CSI call of every driver's client (metrics, the driver panel); see csi-call-stats.ts. */
  onCall?: (call: CsiCallRecord) => void;
}

/** One finished CSI call of a driver's client. */
export interface CsiCallRecord extends CsiCallSample {
  /** The driver's name (the kubelet's `driver_name` label). */
  driver: string;
}

interface DriverEntry {
  name: string;
  endpoint: string;
  source: CsiDriverSource;
  /** The plugins_registry socket the driver registered from; null for `--csi-driver`. */
  registrationSocket: string | null;
  /** Refused registrations of the same name, by registration socket, while those sockets exist. */
  refusals: Map<string, string>;
  client: CsiClient;
  registered: boolean;
  nodeId: string | null;
  maxVolumesPerNode: number | null;
  vendorVersion: string | null;
  nodeCapabilities: NodeCapability[];
  controllerCapabilities: ControllerCapability[];
  pluginCapabilities: string[];
  lastProbeAt: number | null;
  lastError: string | null;
  /** Bumped on every (re)registration; results of older handshakes are dropped. */
  generation: number;
  retryTimer: TimerHandle | null;
  retryDelayMs: number;
  probeTimer: TimerHandle | null;
}

export class CsiDriverRegistry {
  readonly callTimeoutMs: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly retryInitialMs: number;
  private readonly retryMaxMs: number;
  private readonly probeIntervalMs: number;
  private readonly nodeInfo: CsiNodeInfoManager | null;
  private readonly onCall: ((call: CsiCallRecord) => void) | null;
  private readonly entries = new Map<string, DriverEntry>();
  private readonly listeners = new Set<() => void>();
  private readonly registrationWaiters = new Map<string, Set<() => void>>();
  private closed = false;

  constructor(opts: CsiDriverRegistryOptions) {
    this.clock = opts.clock;
    this.log = opts.logger ?? discardLogger;
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CSI_TIMEOUT_MS;
    this.retryInitialMs = opts.retryInitialMs ?? 500;
    this.retryMaxMs = opts.retryMaxMs ?? 30_000;
    this.probeIntervalMs = opts.probeIntervalMs ?? 0;
    this.nodeInfo = opts.nodeInfo ?? null;
    this.onCall = opts.onCall ?? null;
  }

  /**
   * Adds a driver given on the command line and runs its handshake. Resolves with the driver's
   * details after the first attempt, registered or not; a failed handshake is retried on the
   * Clock until it succeeds or the registry is closed.
   */
  async addDriver(name: string, endpoint: string): Promise<CsiDriverDetails> {
    const old = this.entries.get(name);
    if (old?.source === 'flag') {
      throw new CsiDriverRegistrationRefusedError(`--csi-driver ${name} is given twice (${old.endpoint} and ${unixEndpoint(endpoint)})`);
    }
    if (old !== undefined) {
      this.log.warn(`kubernetes.io/csi: --csi-driver ${name} replaces the driver registered from socket ${old.registrationSocket ?? ''} at ${old.endpoint}`, { driver: name });
    }
    const entry = this.upsert(name, unixEndpoint(endpoint), 'flag', null);
    await this.handshake(entry, entry.generation);
    return this.detailsOf(entry);
  }

  /**
   * Registers a driver found by the plugin watcher at `registrationSocket` (`RegisterPlugin`):
   * runs the handshake and throws its error when it fails (the watcher reports it through
   * NotifyRegistrationStatus and retries). A failed driver stays listed, unregistered, with its
   * error. Throws a {@link CsiDriverRegistrationRefusedError}, changing nothing of the holder but
   * its refusal note, when the name belongs to `--csi-driver` or to another registration socket.
   */
  async registerPlugin(name: string, endpoint: string, registrationSocket: string): Promise<void> {
    const ep = unixEndpoint(endpoint);
    const refusal = this.refusalOf(name, ep, registrationSocket);
    if (refusal !== null) throw refusal;
    const entry = this.upsert(name, ep, 'plugin-watcher', registrationSocket);
    const err = await this.handshake(entry, entry.generation);
    if (err !== null) throw err;
  }

  /** Why a registration of `name` from `socket` is refused, or null; notes the refusal on the holder. */
  private refusalOf(name: string, endpoint: string, socket: string): CsiDriverRegistrationRefusedError | null {
    const prefix = `kubernetes.io/csi: RegisterPlugin for CSI driver ${JSON.stringify(truncateMessage(name, 256))} failed.`;
    if (name.length > MAX_CSI_DRIVER_NAME_LENGTH) {
      return new CsiDriverRegistrationRefusedError(`${prefix} The name has ${name.length} characters, more than the ${MAX_CSI_DRIVER_NAME_LENGTH} a CSI driver name may have`);
    }
    const holder = this.entries.get(name);
    if (holder === undefined || holder.registrationSocket === socket) return null;
    const taken =
      holder.source === 'flag'
        ? `The name is taken by --csi-driver (endpoint ${holder.endpoint})`
        : `The name is taken by the registration from socket ${holder.registrationSocket ?? ''} (endpoint ${holder.endpoint}) until that socket is removed`;
    const message = `${prefix} ${taken}; the registration from socket ${socket} (endpoint ${truncateMessage(endpoint, 256)}) is refused`;
    if (holder.refusals.get(socket) !== message) {
      holder.refusals.set(socket, message);
      this.log.warn(message, { driver: name, socket });
      this.changed();
    }
    return new CsiDriverRegistrationRefusedError(message);
  }

  /**
   * `DeRegisterPlugin`: the registration socket `registrationSocket` disappeared. Forgets the
   * driver when it registered from that socket (later calls get the not-registered error); a
   * socket whose registration was refused only loses its refusal note. A `--csi-driver` driver
   * is never deregistered by a socket.
   */
  deregisterPlugin(name: string, registrationSocket: string): void {
    const entry = this.entries.get(name);
    if (entry === undefined) return;
    if (entry.registrationSocket !== registrationSocket) {
      if (entry.refusals.delete(registrationSocket)) this.changed();
      return;
    }
    this.log.info(`kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin ${name}`, { driver: name });
    const wasRegistered = entry.registered;
    this.drop(entry);
    this.entries.delete(name);
    this.changed();
    // unregisterDriver → nim.UninstallCSIDriver; its failure is only logged, as the kubelet's.
    if (wasRegistered && this.nodeInfo !== null) {
      this.nodeInfo.uninstallDriver(name).catch((err: unknown) => {
        this.log.error(`kubernetes.io/csi: failed to uninstall CSI driver ${name} from the CSINode: ${errorMessage(err)}`, { driver: name });
      });
    }
  }

  /** Whether the driver completed its handshake. */
  isRegistered(name: string): boolean {
    return this.entries.get(name)?.registered === true;
  }

  /**
   * The client of a registered driver. Throws {@link CsiDriverNotRegisteredError} (a
   * TransientOperationFailure) when the driver is unknown or not registered yet.
   */
  client(name: string): CsiClient {
    const entry = this.entries.get(name);
    if (entry === undefined || !entry.registered) throw new CsiDriverNotRegisteredError(name);
    return entry.client;
  }

  /** NodeGetInfo `node_id` of a registered driver, else undefined. */
  nodeId(name: string): string | undefined {
    const entry = this.entries.get(name);
    return entry?.registered === true && entry.nodeId !== null ? entry.nodeId : undefined;
  }

  /** The cached node capabilities of a registered driver, else undefined. */
  nodeCapabilities(name: string): ReadonlySet<NodeCapability> | undefined {
    const entry = this.entries.get(name);
    return entry?.registered === true ? new Set(entry.nodeCapabilities) : undefined;
  }

  /** The cached controller capabilities of a registered driver (empty without CONTROLLER_SERVICE), else undefined. */
  controllerCapabilities(name: string): ReadonlySet<ControllerCapability> | undefined {
    const entry = this.entries.get(name);
    return entry?.registered === true ? new Set(entry.controllerCapabilities) : undefined;
  }

  /**
   * Asks the driver for its node capabilities now (the kubelet does so before every stage,
   * unstage, publish and expand) and updates the cache. Errors of the call are returned as thrown
   * by the client (not recorded as the driver's lastError: they belong to the operation).
   */
  async refreshNodeCapabilities(name: string, timeoutMs?: number): Promise<ReadonlySet<NodeCapability>> {
    const client = this.client(name);
    const entry = this.entries.get(name);
    const caps = rpcCapabilityTypes(await client.nodeGetCapabilities(timeoutMs === undefined ? undefined : { timeoutMs }));
    if (entry !== undefined && this.entries.get(name) === entry && !sameList(entry.nodeCapabilities, caps)) {
      entry.nodeCapabilities = caps;
      this.changed();
    }
    return new Set(caps);
  }

  /**
   * Probes a registered driver (Probe, NodeGetCapabilities) and records the outcome in
   * `lastProbeAt`/`lastError`. A failing probe does not deregister the driver (nor does the
   * kubelet's); it shows the problem. Resolves with the error, or null.
   */
  async probe(name: string): Promise<Error | null> {
    const entry = this.entries.get(name);
    if (entry === undefined || !entry.registered) return new CsiDriverNotRegisteredError(name);
    const generation = entry.generation;
    let error: Error | null = null;
    try {
      const probe = await entry.client.probe();
      if (probe.ready !== null && !probe.ready.value) throw new Error(`driver ${name} is not ready (Probe returned ready=false)`);
      const caps = rpcCapabilityTypes(await entry.client.nodeGetCapabilities());
      if (entry.generation === generation) entry.nodeCapabilities = caps;
    } catch (err) {
      error = err instanceof Error ? err : new Error(String(err));
    }
    if (entry.generation !== generation || this.entries.get(name) !== entry) return error;
    entry.lastProbeAt = this.clock.now();
    entry.lastError = error === null ? null : `probing CSI driver ${name} failed: ${error.message}`;
    this.changed();
    return error;
  }

  /** Resolves once the driver is registered (at once if it already is). For start-up sequencing and tests. */
  whenRegistered(name: string): Promise<void> {
    if (this.isRegistered(name)) return Promise.resolve();
    return new Promise((resolve) => {
      const set = this.registrationWaiters.get(name) ?? new Set();
      set.add(resolve);
      this.registrationWaiters.set(name, set);
    });
  }

  /** Every known driver for the snapshot, sorted by name. */
  drivers(): CsiDriverStatus[] {
    return [...this.entries.values()].sort((a, b) => a.name.localeCompare(b.name)).map((e) => this.snapshotOf(e));
  }

  /** One driver with everything known about it, or undefined. */
  details(name: string): CsiDriverDetails | undefined {
    const e = this.entries.get(name);
    return e === undefined ? undefined : this.detailsOf(e);
  }

  private detailsOf(e: DriverEntry): CsiDriverDetails {
    return {
      ...this.snapshotOf(e),
      source: e.source,
      controllerCapabilities: [...e.controllerCapabilities],
      pluginCapabilities: [...e.pluginCapabilities],
      vendorVersion: e.vendorVersion,
      maxVolumesPerNode: e.maxVolumesPerNode,
    };
  }

  /** Calls `listener` after every change of {@link drivers}. Returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops retries and probes and closes every client. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const entry of this.entries.values()) this.drop(entry);
    // Every driver reads as not registered now.
    if (this.entries.size > 0) this.changed();
  }

  private upsert(name: string, endpoint: string, source: CsiDriverSource, registrationSocket: string | null): DriverEntry {
    if (this.closed) throw new Error('the CSI driver registry is closed');
    if (name === '') throw new Error('a CSI driver name must not be empty');
    const old = this.entries.get(name);
    if (old !== undefined) this.drop(old);
    const entry: DriverEntry = {
      name,
      endpoint,
      source,
      registrationSocket,
      // A socket registering again keeps the notes of the sockets it is refusing.
      refusals: old?.registrationSocket === registrationSocket ? old.refusals : new Map<string, string>(),
      client: new CsiClient(endpoint, { clock: this.clock, timeoutMs: this.callTimeoutMs, logger: this.log, logFields: { driver: name }, ...this.callObserver(name) }),
      registered: false,
      nodeId: null,
      maxVolumesPerNode: null,
      vendorVersion: null,
      nodeCapabilities: [],
      controllerCapabilities: [],
      pluginCapabilities: [],
      lastProbeAt: null,
      lastError: null,
      generation: (old?.generation ?? 0) + 1,
      retryTimer: null,
      retryDelayMs: this.retryInitialMs,
      probeTimer: null,
    };
    this.entries.set(name, entry);
    this.log.info(`kubernetes.io/csi: Register new plugin with name: ${name} at endpoint: ${endpoint}`, { driver: name, source });
    this.changed();
    return entry;
  }

  private callObserver(driver: string): { onCall?: (call: CsiCallSample) => void } {
    const onCall = this.onCall;
    return onCall === null
      ? {}
      : {
          onCall: (call) => {
            onCall({ ...call, driver });
          },
        };
  }

  /** Runs the handshake; records the outcome unless the entry was replaced meanwhile. Returns the error or null. */
  private async handshake(entry: DriverEntry, generation: number): Promise<Error | null> {
    const { name, client } = entry;
    const step = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (err) {
        throw new Error(`${what} failed: ${errorMessage(err)}`, { cause: err });
      }
    };
    let error: Error | null = null;
    try {
      const info = await step('GetPluginInfo', () => client.getPluginInfo());
      if (info.name !== name) {
        throw new Error(`the driver at ${entry.endpoint} reports the name ${JSON.stringify(info.name)}, not ${JSON.stringify(name)}`);
      }
      const pluginCaps = pluginCapabilityNames(await step('GetPluginCapabilities', () => client.getPluginCapabilities()));
      const probe = await step('Probe', () => client.probe());
      if (probe.ready !== null && !probe.ready.value) throw new Error(`driver ${name} is not ready (Probe returned ready=false)`);
      const nodeInfo = await step('NodeGetInfo', () => client.nodeGetInfo());
      if (nodeInfo.node_id === '') throw new Error(`NodeGetInfo of driver ${name} returned an empty node_id`);
      const nodeCaps = rpcCapabilityTypes(await step('NodeGetCapabilities', () => client.nodeGetCapabilities()));
      const controllerCaps = pluginCaps.includes('CONTROLLER_SERVICE')
        ? rpcCapabilityTypes(await step('ControllerGetCapabilities', () => client.controllerGetCapabilities()))
        : [];
      if (entry.generation !== generation || this.entries.get(name) !== entry) return null;
      const nodeInfoManager = this.nodeInfo;
      if (nodeInfoManager !== null) {
        // RegisterPlugin: nim.InstallCSIDriver before the driver counts as registered.
        const installed = { name, nodeId: nodeInfo.node_id, maxVolumesPerNode: nodeInfo.max_volumes_per_node, topology: { ...(nodeInfo.accessible_topology?.segments ?? {}) } };
        await step('InstallCSIDriver (CSINode update)', () => nodeInfoManager.installDriver(installed));
        if (entry.generation !== generation || this.entries.get(name) !== entry) return null;
      }
      Object.assign(entry, {
        registered: true,
        nodeId: nodeInfo.node_id,
        maxVolumesPerNode: nodeInfo.max_volumes_per_node,
        vendorVersion: info.vendor_version,
        pluginCapabilities: pluginCaps,
        nodeCapabilities: nodeCaps,
        controllerCapabilities: controllerCaps,
      });
    } catch (err) {
      const text = truncateMessage(`RegisterPlugin error -- CSI driver ${name} at ${entry.endpoint}: ${errorMessage(err)}`);
      error = new Error(text, { cause: err });
    }
    if (entry.generation !== generation || this.entries.get(name) !== entry) return error;
    entry.lastProbeAt = this.clock.now();
    entry.lastError = error?.message ?? null;
    if (error === null) {
      entry.retryDelayMs = this.retryInitialMs;
      this.log.info(`kubernetes.io/csi: driver ${name} registered`, { driver: name, nodeId: entry.nodeId, capabilities: entry.nodeCapabilities });
      this.scheduleProbe(entry);
      const waiters = this.registrationWaiters.get(name);
      this.registrationWaiters.delete(name);
      for (const resolve of waiters ?? []) resolve();
    } else {
      entry.registered = false;
      this.log.warn(error.message, { driver: name });
      if (entry.source === 'flag') this.scheduleRetry(entry);
    }
    this.changed();
    return error;
  }

  private scheduleRetry(entry: DriverEntry): void {
    if (this.closed || entry.retryTimer !== null) return;
    const delay = entry.retryDelayMs;
    entry.retryDelayMs = Math.min(delay * 2, this.retryMaxMs);
    const generation = entry.generation;
    entry.retryTimer = this.clock.setTimeout(() => {
      entry.retryTimer = null;
      if (this.closed || this.entries.get(entry.name) !== entry || entry.generation !== generation) return;
      void this.handshake(entry, generation);
    }, delay);
  }

  private scheduleProbe(entry: DriverEntry): void {
    if (this.closed || this.probeIntervalMs <= 0 || entry.probeTimer !== null) return;
    entry.probeTimer = this.clock.setTimeout(() => {
      entry.probeTimer = null;
      if (this.closed || this.entries.get(entry.name) !== entry) return;
      void this.probe(entry.name).finally(() => {
        this.scheduleProbe(entry);
      });
    }, this.probeIntervalMs);
  }

  private drop(entry: DriverEntry): void {
    entry.generation++;
    entry.registered = false;
    if (entry.retryTimer !== null) this.clock.clearTimeout(entry.retryTimer);
    if (entry.probeTimer !== null) this.clock.clearTimeout(entry.probeTimer);
    entry.retryTimer = null;
    entry.probeTimer = null;
    entry.client.close();
  }

  private snapshotOf(e: DriverEntry): CsiDriverStatus {
    return {
      name: e.name,
      endpoint: e.endpoint,
      registered: e.registered,
      nodeId: e.nodeId,
      capabilities: [...e.nodeCapabilities],
      lastProbeAt: e.lastProbeAt,
      lastError: e.lastError ?? firstRefusal(e),
    };
  }

  private changed(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.log.error('CSI driver registry listener failed', { error: errorMessage(err) });
      }
    }
  }
}

/** The refusal note shown while the holder has no error of its own: the first by socket path. */
function firstRefusal(e: DriverEntry): string | null {
  const first = [...e.refusals.keys()].sort()[0];
  return first === undefined ? null : (e.refusals.get(first) ?? null);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
