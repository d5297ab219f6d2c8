/**
 * ManifestSource: the standalone object source of the node agent (`--manifest-dir`). It loads
 * Kubernetes objects from a directory of manifest files, keeps them current while the files
 * change, and serves the valid ones to the desired-state populator (pods) and the volume plugins
 * (PVs, PVCs, ConfigMaps, Secrets, CSIDrivers). It plays the kubelet's file pod source and, for a
 * node without an API server, the API server's object store.
 *
 * How changes are picked up: chokidar (native fs events, top level of the directory only) is only
 * a trigger. Any event (including for ignored names, so the `..data` symlink swap of a ConfigMap
 * volume counts) arms one debounce timer; when it fires, the whole directory is rescanned and each
 * file whose content hash changed is re-parsed. Rescanning rather than applying events one by one
 * makes atomic saves (write temp + rename), deletes-and-recreates and lost events come out right.
 * A periodic full rescan (`resyncIntervalMs`, like the kubelet's `--file-check-frequency`) is the
 * safety net for events a filesystem never delivers.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { watch } from 'chokidar';
import type { FSWatcher } from 'chokidar';
import { delayToNextTick, type Clock, type TimerHandle } from '../../clock/clock.ts';
import type {
  ConfigMap,
  CSIDriver,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
} from '../../volume/k8s-types.ts';
import { ManifestDirError, ManifestSourceStateError } from './errors.ts';
import { isManifestFileName } from './manifest-file-name.ts';
import {
  buildManifestSnapshot,
  diffManifestSnapshots,
  emptyManifestSnapshot,
  isEmptyDiff,
  namespacedKey,
} from './manifest-snapshot.ts';
import type { ManifestDiff, ManifestFileState, ManifestSnapshot } from './manifest-snapshot.ts';
import { parseManifestFile } from './parse-manifest-file.ts';
import { discardLogger, type Logger } from '../../volume/logger.ts';
import type { ObjectSource, SourceError } from '../source.ts';
import { errorMessage } from '../../volume/errors.ts';

/**
 * Default debounce window: a burst of events is applied 50 ms after its first event, so with a
 * few ms of event delivery and rescanning, a change takes effect well within 100 ms.
 */
export const defaultManifestDebounceMs = 50;
/** Default period of the safety-net full rescan: the kubelet's `--file-check-frequency` (20 s). */
export const defaultManifestResyncIntervalMs = 20_000;
/**
 * Files larger than this are reported as errors instead of read: no manifest set for one node is
 * near it, and it bounds the memory a stray file (a log, an image) can take.
 */
export const defaultMaxManifestFileBytes = 8 * 1024 * 1024;
/**
 * YAML files larger than this are reported as errors instead of parsed. YAML parsing runs on the
 * agent's event loop at roughly a few hundred KB/s for dense collections, so this bounds the time
 * one file can keep the API from answering to a few seconds; it is the Kubernetes limit of a
 * ConfigMap's or Secret's data (1 MiB). JSON parses natively and may be larger (up to
 * {@link defaultMaxManifestFileBytes}).
 */
const defaultMaxYamlManifestFileBytes = 1024 * 1024;

export interface ManifestSourceOptions {
  /** The manifest directory. Only its top level is read; subdirectories are ignored. */
  dir: string;
  /** This node's name: set as `spec.nodeName` of every pod and mixed into derived pod uids. */
  nodeName: string;
  /** Time source for the debounce and resync timers. */
  clock: Clock;
  /** Receives one warn line per new source error and info lines for loads and changes. */
  logger?: Logger;
  /** Debounce window in ms (see {@link defaultManifestDebounceMs}); 0 rescans on the next tick. */
  debounceMs?: number;
  /** Period of the full rescan in ms (see {@link defaultManifestResyncIntervalMs}); 0 disables it. */
  resyncIntervalMs?: number;
  /** See {@link defaultMaxManifestFileBytes}. */
  maxFileBytes?: number;
  /** See {@link defaultMaxYamlManifestFileBytes} (never more than `maxFileBytes`). */
  maxYamlFileBytes?: number;
}

/**
 * One published change. `generation` is the source's generation after the change. Pod uids are
 * listed as added, updated (any field differs) or removed; other kinds are summarised by
 * `objectsChanged`; `errorsChanged` is set when the source errors differ.
 */
export interface ManifestChange extends ManifestDiff {
  generation: number;
}

export type ManifestChangeListener = (change: ManifestChange) => void;

interface FileRecord {
  state: ManifestFileState;
  /** sha256 of the content last read; undefined after a read error (forces a re-parse). */
  contentHash: string | undefined;
}

type ReadOutcome =
  | { kind: 'content'; text: string }
  | { kind: 'absent' }
  | { kind: 'error'; message: string };

type Phase = 'new' | 'starting' | 'running' | 'stopped';

/**
 * Objects from a manifest directory.
 *
 * Contracts:
 * - Only valid files count, and only as a whole (see `parseManifestFile`). A file that becomes
 *   invalid or unreadable keeps providing its last valid version until it is deleted, so a typo
 *   never removes a pod or unmounts a volume; its problems are listed in {@link sourceErrors}.
 * - Deleting a file removes everything it provided. Pods in phase Succeeded/Failed stay listed
 *   (see `isPodTerminated`).
 * - The same object or pod uid in two files: the file first in code-unit order of names wins;
 *   the other file gets a source error and its other objects still count.
 * - If the directory itself becomes unreadable after start, that is a source error for file "."
 *   and everything loaded stays (a vanished mount must not look like "all pods deleted").
 * - Returned objects are frozen and shared; copy before changing.
 * - Listeners run synchronously after each published change, including the initial load when
 *   registered before `start()`; a throwing listener is logged and does not affect others.
 */
export class ManifestSource implements ObjectSource {
  readonly dir: string;
  private readonly nodeName: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly debounceMs: number;
  private readonly resyncIntervalMs: number;
  private readonly maxFileBytes: number;
  private readonly maxYamlFileBytes: number;

  private phase: Phase = 'new';
  private synced = false;
  private generationValue = 0;
  private snapshot: ManifestSnapshot = emptyManifestSnapshot;
  private readonly files = new Map<string, FileRecord>();
  private dirError: SourceError | undefined;
  private readonly listeners = new Set<ManifestChangeListener>();
  private watcher: FSWatcher | undefined;
  private debounceTimer: TimerHandle | undefined;
  private resyncTimer: TimerHandle | undefined;
  /** Scans run one at a time, in order; each link swallows (and logs) its own failure. */
  private scanChain: Promise<void> = Promise.resolve();

  constructor(options: ManifestSourceOptions) {
    this.dir = options.dir;
    this.nodeName = options.nodeName;
    this.clock = options.clock;
    this.logger = options.logger ?? discardLogger;
    this.debounceMs = options.debounceMs ?? defaultManifestDebounceMs;
    this.resyncIntervalMs = options.resyncIntervalMs ?? defaultManifestResyncIntervalMs;
    this.maxFileBytes = options.maxFileBytes ?? defaultMaxManifestFileBytes;
    this.maxYamlFileBytes = Math.min(options.maxYamlFileBytes ?? defaultMaxYamlManifestFileBytes, this.maxFileBytes);
  }

  /** Incremented by every published change; 0 until the initial load found anything. */
  get generation(): number {
    return this.generationValue;
  }

  /**
   * Starts watching and performs the initial full load; resolves once that load is applied (the
   * source is then synced). Throws {@link ManifestDirError} if the directory cannot be read (the
   * source is then stopped), and {@link ManifestSourceStateError} if called twice or after stop.
   */
  async start(): Promise<void> {
    if (this.phase !== 'new') throw new ManifestSourceStateError(`manifest source for ${this.dir} was already started (a source runs once)`);
    this.phase = 'starting';
    try {
      const info = await stat(this.dir);
      if (!info.isDirectory()) throw new Error('not a directory');
      // Watch before the first read, so nothing that changes during the load is missed.
      const watcher = watch(this.dir, { depth: 0, ignoreInitial: true, atomic: false, followSymlinks: false });
      this.watcher = watcher;
      watcher.on('all', () => {
        this.onFileEvent();
      });
      watcher.on('error', (err) => {
        this.logger.warn('manifest directory watch error', { err, dir: this.dir });
      });
      // An error before the watcher is ready (the directory vanished, no permission) fails start.
      await new Promise<void>((resolve, reject) => {
        watcher.once('ready', resolve);
        watcher.once('error', reject);
      });
      await this.enqueueScan();
      if (this.dirError !== undefined) throw new Error(this.dirError.message);
    } catch (err) {
      await this.stop();
      throw new ManifestDirError(this.dir, err);
    }
    // stop() during start: resolve without becoming synced.
    if (this.phase !== 'starting') return;
    this.phase = 'running';
    this.synced = true;
    this.armResync();
    this.logger.info(
      'manifest source synced',
      { dir: this.dir, files: this.files.size, pods: this.snapshot.pods.size, errors: this.snapshot.errors.length },
    );
  }

  /**
   * Stops watching and waits for a running scan to finish. Idempotent. The last state stays
   * readable; no further changes are published.
   */
  async stop(): Promise<void> {
    this.phase = 'stopped';
    if (this.debounceTimer !== undefined) this.clock.clearTimeout(this.debounceTimer);
    if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
    this.debounceTimer = undefined;
    this.resyncTimer = undefined;
    const watcher = this.watcher;
    this.watcher = undefined;
    if (watcher !== undefined) await watcher.close();
    await this.scanChain;
  }

  /** True once the initial load completed (the kubelet's "source ready"); stays true after stop. */
  isSynced(): boolean {
    return this.synced;
  }

  /**
   * Rescans the directory now (after any scan in progress) and resolves when that rescan is
   * applied. For "force resync" actions; the watcher needs no help.
   */
  resync(): Promise<void> {
    return this.enqueueScan();
  }

  /** All pods, in file order then document order. */
  listPods(): Pod[] {
    return [...this.snapshot.pods.values()];
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.snapshot.pods.get(uid);
  }

  getPersistentVolume(name: string): PersistentVolume | undefined {
    return this.snapshot.persistentVolumes.get(name);
  }

  getPersistentVolumeClaim(namespace: string, name: string): PersistentVolumeClaim | undefined {
    return this.snapshot.persistentVolumeClaims.get(namespacedKey(namespace, name));
  }

  getConfigMap(namespace: string, name: string): ConfigMap | undefined {
    return this.snapshot.configMaps.get(namespacedKey(namespace, name));
  }

  getSecret(namespace: string, name: string): Secret | undefined {
    return this.snapshot.secrets.get(namespacedKey(namespace, name));
  }

  getCSIDriver(name: string): CSIDriver | undefined {
    return this.snapshot.csiDrivers.get(name);
  }

  /**
   * Current problems, sorted by file: invalid or unreadable files (whose last valid version, if
   * any, is still served), objects ignored as duplicates, and an unreadable directory (file ".").
   * Empty when every file is valid.
   */
  sourceErrors(): SourceError[] {
    return [...this.snapshot.errors];
  }

  /** Registers a listener for published changes; returns the function that unregisters it. */
  onChange(listener: ManifestChangeListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // -------------------------------------------------------------------------------------------

  /**
   * Debounce: the first event of a burst arms the timer and later events ride along, so a burst
   * is applied `debounceMs` after it began. (Re-arming on every event would let a steady stream
   * of writes postpone the update forever.)
   */
  private onFileEvent(): void {
    if (this.phase === 'new' || this.phase === 'stopped' || this.debounceTimer !== undefined) return;
    this.debounceTimer = this.clock.setTimeout(() => {
      this.debounceTimer = undefined;
      void this.enqueueScan();
    }, this.debounceMs);
  }

  private armResync(): void {
    if (this.resyncIntervalMs <= 0 || this.phase !== 'running') return;
    this.resyncTimer = this.clock.setTimeout(() => {
      this.resyncTimer = undefined;
      void this.enqueueScan().then(() => {
        this.armResync();
      });
    }, delayToNextTick(this.clock, this.resyncIntervalMs));
  }

  private enqueueScan(): Promise<void> {
    this.scanChain = this.scanChain.then(() => this.scan()).catch((err: unknown) => {
      this.logger.warn('manifest directory scan failed', { err, dir: this.dir });
    });
    return this.scanChain;
  }

  /** Reads the directory, re-parses changed files, forgets deleted ones, publishes the result. */
  private async scan(): Promise<void> {
    if (this.phase === 'stopped') return;
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter(isManifestFileName).sort();
      this.dirError = undefined;
    } catch (err) {
      this.dirError = {
        file: '.',
        message: `.: manifest directory ${this.dir} cannot be read: ${errorMessage(err)} (keeping the objects loaded before)`,
      };
      this.publish();
      return;
    }

    const present = new Set<string>();
    for (const name of names) {
      const outcome = await this.readManifest(name);
      if (outcome.kind === 'absent') continue;
      present.add(name);
      const previous = this.files.get(name);
      const lastValid = previous?.state.objects ?? [];
      if (outcome.kind === 'error') {
        const errors = [{ file: name, message: `${name}: ${outcome.message}` }];
        this.files.set(name, { contentHash: undefined, state: { file: name, objects: lastValid, errors } });
        continue;
      }
      const contentHash = createHash('sha256').update(outcome.text).digest('hex');
      if (previous?.contentHash === contentHash) continue;
      const parsed = parseManifestFile(name, outcome.text, this.nodeName);
      const objects = parsed.errors.length === 0 ? parsed.objects : lastValid;
      this.files.set(name, { contentHash, state: { file: name, objects, errors: parsed.errors } });
    }
    for (const name of [...this.files.keys()]) {
      if (!present.has(name)) this.files.delete(name);
    }
    this.publish();
  }

  /**
   * Reads one entry: a regular file (through symlinks) is content; a missing entry or a
   * directory is absent; anything else (a FIFO, a device, a socket) is an error, never opened
   * for reading by content. The file is opened non-blocking and checked again on the open
   * handle, so an entry swapped for a FIFO after the first check cannot hang the scan, and at
   * most the limit plus one byte is read, so a file that grows after the check is still refused.
   * Content must be UTF-8.
   */
  private async readManifest(name: string): Promise<ReadOutcome> {
    const path = join(this.dir, name);
    const limit = name.endsWith('.json') ? this.maxFileBytes : this.maxYamlFileBytes;
    const tooLarge = (size: number): ReadOutcome => ({
      kind: 'error',
      message: limit === this.maxFileBytes ? `is ${size} bytes, larger than the limit of ${limit}` : `is ${size} bytes, larger than the limit of ${limit} for YAML (JSON files may have up to ${this.maxFileBytes})`,
    });
    try {
      const info = await stat(path);
      const refusal = this.refuseEntry(info, limit, tooLarge);
      if (refusal !== null) return refusal;
      const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
      let bytes: Buffer;
      try {
        const openedInfo = await handle.stat();
        const opened = this.refuseEntry(openedInfo, limit, tooLarge);
        if (opened !== null) return opened;
        // Sized by the file (one byte more shows growth), grown up to limit + 1 while it still
        // grows: allocating the limit for every file made each rescan of a directory with many
        // manifests zero-fill megabytes per file.
        bytes = Buffer.allocUnsafe(Math.min(limit, openedInfo.size) + 1);
        let length = 0;
        for (;;) {
          if (length === bytes.length) {
            const grown = Buffer.allocUnsafe(Math.min(limit + 1, bytes.length * 2));
            bytes.copy(grown, 0, 0, length);
            bytes = grown;
          }
          const { bytesRead } = await handle.read(bytes, length, bytes.length - length, null);
          if (bytesRead === 0) break;
          length += bytesRead;
          if (length > limit) return tooLarge(length);
        }
        bytes = bytes.subarray(0, length);
      } finally {
        await handle.close();
      }
      try {
        return { kind: 'content', text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
      } catch {
        return { kind: 'error', message: 'is not UTF-8 text (manifests are YAML or JSON in UTF-8)' };
      }
    } catch (err) {
      // Deleted (or a dangling symlink) between listing and reading: the file is gone.
      if (isErrnoException(err) && err.code === 'ENOENT') return { kind: 'absent' };
      return { kind: 'error', message: `cannot be read: ${errorMessage(err)}` };
    }
  }

  /** Why an entry is not read (absent for a directory), or null for a regular file within the limit. */
  private refuseEntry(info: Stats, limit: number, tooLarge: (size: number) => ReadOutcome): ReadOutcome | null {
    // A directory named like a manifest is not one; treat it as absent (it provides nothing).
    if (info.isDirectory()) return { kind: 'absent' };
    if (!info.isFile()) return { kind: 'error', message: `is not a regular file (${entryKind(info)}); manifests are read from regular files only` };
    if (info.size > limit) return tooLarge(info.size);
    return null;
  }

  private publish(): void {
    if (this.phase === 'stopped') return;
    const records = [...this.files.values()].map((r) => r.state);
    const next = buildManifestSnapshot(records, this.dirError === undefined ? [] : [this.dirError]);
    const previous = this.snapshot;
    const diff = diffManifestSnapshots(previous, next);
    this.snapshot = next;
    if (isEmptyDiff(diff)) return;
    this.generationValue += 1;
    this.logChange(previous, next, diff);
    const change: ManifestChange = { generation: this.generationValue, ...diff };
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch (err) {
        this.logger.warn('manifest source change listener failed', { err });
      }
    }
  }

  private logChange(previous: ManifestSnapshot, next: ManifestSnapshot, diff: ManifestDiff): void {
    const { added, updated, removed } = diff.pods;
    if (added.length + updated.length + removed.length > 0 || diff.objectsChanged) {
      this.logger.info(
        'manifest objects changed',
        { generation: this.generationValue, podsAdded: added, podsUpdated: updated, podsRemoved: removed, objectsChanged: diff.objectsChanged },
      );
    }
    if (!diff.errorsChanged) return;
    const before = new Set(previous.errors.map((e) => e.message));
    const after = new Set(next.errors.map((e) => e.message));
    for (const e of next.errors) {
      if (before.has(e.message)) continue;
      // For an invalid or unreadable file, say how much of its last valid version is still served.
      const record = this.files.get(e.file);
      const keptObjects = record !== undefined && record.state.errors.includes(e) ? record.state.objects.length : 0;
      this.logger.warn(
        keptObjects > 0 ? 'manifest source error; keeping the last valid version of the file' : 'manifest source error',
        { file: e.file, error: e.message, keptObjects },
      );
    }
    for (const e of previous.errors) {
      if (!after.has(e.message)) this.logger.info('manifest source error resolved', { file: e.file, error: e.message });
    }
  }
}

function entryKind(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
  return 'not a file';
}

function isErrnoException(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && 'code' in err;
}
