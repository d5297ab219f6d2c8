/**
 * The kubelet's plugin watcher, for CSI drivers only (pkg/kubelet/pluginmanager): watches
 * `<root-dir>/plugins_registry` for registration sockets that a node-driver-registrar (or the
 * csi-loop driver's `--registration-dir`) places there, one per driver.
 *
 * For each `*.sock` that is a unix socket:
 * 1. `pluginregistration.Registration/GetInfo` → `{type, name, endpoint, supported_versions}`;
 * 2. the type must be `CSIPlugin` and a 1.x version must be offered (the kubelet's
 *    `ValidatePlugin`); an empty endpoint means the registration socket itself;
 * 3. the driver registers with the {@link CsiDriverRegistry} (its CSI handshake);
 * 4. `NotifyRegistrationStatus{plugin_registered, error}` tells the plugin the outcome.
 * A failed socket is retried at every resync (default every second, the kubelet's reconciler
 * period). A socket that disappears deregisters its driver; a socket replaced by a new one
 * (another inode: the driver restarted) registers again. Unlike upstream, a replaced socket
 * keeps its driver's name while it registers again, so another socket waiting for the same name
 * cannot take it in that moment; if the new socket announces another name, the old one is
 * deregistered. The registry refuses a name that `--csi-driver` or another socket holds.
 *
 * Directory events come from `fs.watch`; the periodic resync on the Clock also catches anything
 * the events missed. Only the directory itself is watched (no subdirectories).
 */
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { delayToNextTick, type Clock, type TimerHandle } from '../../clock/clock.ts';
import { truncateMessage } from '../../truncate-message.ts';
import { discardLogger, type Logger } from '../logger.ts';
import { PluginRegistrationClient } from './csi-client.ts';
import type { CsiDriverRegistry } from './csi-driver-registry.ts';
import type { PluginInfo } from './csi-types.ts';
import { errorMessage } from '../errors.ts';

/** `<root-dir>/plugins_registry`: kubelet's `config.DefaultKubeletPluginsRegistrationDirName`. */
export const PLUGINS_REGISTRATION_DIR_NAME = 'plugins_registry';

/** The registration directory of a kubelet root dir. */
export function pluginsRegistrationDir(rootDir: string): string {
  return join(rootDir, PLUGINS_REGISTRATION_DIR_NAME);
}

/** The plugin type CSI drivers register as. */
const CSI_PLUGIN_TYPE = 'CSIPlugin';

export interface PluginWatcherOptions {
  /** The registration directory; created (0750) when missing. */
  dir: string;
  registry: CsiDriverRegistry;
  clock: Clock;
  logger?: Logger;
  /** Rescan period; default 1000 ms. */
  resyncMs?: number;
  /** Deadline of GetInfo and NotifyRegistrationStatus; default 10 s. */
  callTimeoutMs?: number;
}

/** One registration socket as the watcher sees it. */
export interface PluginSocketStatus {
  socketPath: string;
  /** The driver name GetInfo returned; null until it answered. */
  driverName: string | null;
  registered: boolean;
  /** The last registration error; null after success or before the first attempt. */
  lastError: string | null;
}

interface SocketState extends PluginSocketStatus {
  /** Identity of the socket file, so a replaced socket is registered again. */
  ino: number;
  /** The name the socket's previous incarnation (before it was replaced) registered, until the new one answers GetInfo. */
  previousDriverName: string | null;
  inFlight: Promise<void> | null;
}

export class PluginWatcher {
  readonly dir: string;
  private readonly registry: CsiDriverRegistry;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly resyncMs: number;
  private readonly callTimeoutMs: number;
  private readonly sockets = new Map<string, SocketState>();
  private watcher: FSWatcher | null = null;
  private timer: TimerHandle | null = null;
  private scanning: Promise<void> | null = null;
  private rescanRequested = false;
  private stopped = true;

  constructor(opts: PluginWatcherOptions) {
    this.dir = opts.dir;
    this.registry = opts.registry;
    this.clock = opts.clock;
    this.log = opts.logger ?? discardLogger;
    this.resyncMs = opts.resyncMs ?? 1000;
    this.callTimeoutMs = opts.callTimeoutMs ?? 10_000;
  }

  /** Creates the directory, starts watching it and registers the sockets already there. */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    await mkdir(this.dir, { recursive: true, mode: 0o750 });
    this.watcher = watch(this.dir, () => {
      this.trigger();
    });
    this.watcher.on('error', (err) => {
      this.log.warn(`plugin watcher on ${this.dir} failed; relying on the periodic rescan`, { error: err.message });
    });
    await this.scan();
    this.scheduleResync();
  }

  /** Stops watching. Registered drivers stay registered (the kubelet does not deregister on shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    this.watcher = null;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.scanning;
    await this.inFlight();
  }

  /** The sockets found, sorted by path. */
  status(): PluginSocketStatus[] {
    return [...this.sockets.values()]
      .sort((a, b) => a.socketPath.localeCompare(b.socketPath))
      .map(({ socketPath, driverName, registered, lastError }) => ({ socketPath, driverName, registered, lastError }));
  }

  /** Runs a scan now (and waits for the registrations it starts). */
  async scanNow(): Promise<void> {
    await this.scan();
    await this.inFlight();
  }

  private async inFlight(): Promise<void> {
    await Promise.all([...this.sockets.values()].flatMap((s) => (s.inFlight === null ? [] : [s.inFlight])));
  }

  private trigger(): void {
    if (this.stopped) return;
    void this.scan();
  }

  private scheduleResync(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      void this.scan().finally(() => {
        this.scheduleResync();
      });
    }, delayToNextTick(this.clock, this.resyncMs));
  }

  /** One pass at a time; a request during a pass runs one more pass afterwards. */
  private scan(): Promise<void> {
    if (this.scanning !== null) {
      this.rescanRequested = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      do {
        this.rescanRequested = false;
        try {
          await this.scanOnce();
        } catch (err) {
          this.log.warn(`plugin watcher: scanning ${this.dir} failed`, { error: errorMessage(err) });
        }
      } while (this.rescanRequested && !this.stopped);
    })().finally(() => {
      this.scanning = null;
    });
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    const found = new Map<string, number>();
    for (const name of await readdir(this.dir)) {
      if (name.startsWith('.') || !name.endsWith('.sock')) continue;
      const path = join(this.dir, name);
      try {
        const st = await lstat(path);
        if (st.isSocket()) found.set(path, st.ino);
      } catch {
        // Gone between readdir and lstat: the next pass sees it missing.
      }
    }
    const replaced = new Map<string, string | null>();
    for (const [path, state] of this.sockets) {
      const ino = found.get(path);
      if (ino !== state.ino) {
        await state.inFlight;
        this.sockets.delete(path);
        const name = state.driverName ?? state.previousDriverName;
        if (ino !== undefined) {
          // Replaced: the new socket registers again under the name it announces (see the file comment).
          replaced.set(path, name);
        } else if (name !== null) {
          // Also after a failed registration: the registry lists the driver with its error until then.
          this.log.info(`plugin watcher: registration socket ${path} removed, deregistering CSI driver ${name}`);
          this.registry.deregisterPlugin(name, path);
        }
      }
    }
    if (this.stopped) return;
    for (const [path, ino] of found) {
      let state = this.sockets.get(path);
      if (state === undefined) {
        state = { socketPath: path, driverName: null, registered: false, lastError: null, ino, previousDriverName: replaced.get(path) ?? null, inFlight: null };
        this.sockets.set(path, state);
      }
      if (!state.registered && state.inFlight === null) {
        const s = state;
        s.inFlight = this.register(s).finally(() => {
          s.inFlight = null;
        });
      }
    }
  }

  private async register(state: SocketState): Promise<void> {
    const client = new PluginRegistrationClient(state.socketPath, { clock: this.clock, timeoutMs: this.callTimeoutMs, logger: this.log });
    try {
      let info: PluginInfo;
      try {
        info = await client.getInfo();
      } catch (err) {
        const text = `failed to get plugin info using RPC GetInfo at socket ${state.socketPath}, err: ${errorMessage(err)}`;
        // Once per distinct failure: a broken socket is retried every resync.
        if (text !== state.lastError) this.log.warn(text);
        state.lastError = text;
        return;
      }
      state.driverName = info.name;
      if (state.previousDriverName !== null && state.previousDriverName !== info.name) {
        this.log.info(`plugin watcher: registration socket ${state.socketPath} now announces CSI driver ${info.name}, deregistering ${state.previousDriverName}`);
        this.registry.deregisterPlugin(state.previousDriverName, state.socketPath);
      }
      state.previousDriverName = null;
      // Bounded: the texts name what the plugin announced, which may be anything.
      const result = await this.registerInfo(state, info);
      const error = result === null ? null : truncateMessage(result);
      state.registered = error === null;
      state.lastError = error;
      try {
        await client.notifyRegistrationStatus({ plugin_registered: error === null, error: error ?? '' });
      } catch (err) {
        this.log.warn(`plugin watcher: NotifyRegistrationStatus to ${state.socketPath} failed`, { error: errorMessage(err) });
      }
    } finally {
      client.close();
    }
  }

  /** Validates and registers; returns the error text, or null on success. */
  private async registerInfo(state: SocketState, info: PluginInfo): Promise<string | null> {
    if (info.type !== CSI_PLUGIN_TYPE) return `no handler registered for plugin type: ${info.type} at socket ${state.socketPath}`;
    const endpoint = info.endpoint === '' ? state.socketPath : info.endpoint;
    const versionError = validateVersions(info.name, info.supported_versions);
    if (versionError !== null) return `validation failed for CSI Driver ${info.name} at endpoint ${endpoint}: ${versionError}`;
    if (this.stopped) return 'the plugin watcher stopped';
    try {
      await this.registry.registerPlugin(info.name, endpoint, state.socketPath);
      this.log.info(`plugin watcher: registered CSI driver ${info.name} from ${state.socketPath}`, { endpoint });
      return null;
    } catch (err) {
      return errorMessage(err);
    }
  }
}

/**
 * The kubelet's CSI version check: at least one offered version must parse and have major 1
 * (0.x is unsupported since 1.17; 2.x+ may be incompatible). Returns the error text or null.
 */
export function validateVersions(driverName: string, versions: readonly string[]): string | null {
  if (versions.length === 0) {
    return `kubernetes.io/csi: RegisterPlugin for CSI driver ${JSON.stringify(driverName)} failed. Plugin returned an empty list for supported versions`;
  }
  const ok = versions.some((v) => /^v?1(\.[0-9]+){0,2}$/.test(v.trim()));
  if (!ok) {
    return `kubernetes.io/csi: RegisterPlugin for CSI driver ${JSON.stringify(driverName)} failed. None of the versions specified ${JSON.stringify(versions)} are supported (a 1.x version is required)`;
  }
  return null;
}

