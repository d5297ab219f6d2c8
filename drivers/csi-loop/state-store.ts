/**
 * The driver's persistent state: one JSON file (`<state-dir>/state.json`) holding every volume the
 * driver knows, its capacity, where it is attached, staged and published. It is rewritten
 * atomically (a per-process temp file + rename) after every change, so a restarted driver
 * continues where the previous process stopped.
 *
 * Several csi-loop processes may share one state dir (the controller instance and the node
 * instances of one driver, as a real multi-node driver shares its backend): every change runs in
 * {@link StateStore.exclusive}, which holds the dir's lock file (`state.lock`, created with
 * O_EXCL, holding the owner's pid) and re-reads state.json when it takes the lock, so no process
 * writes from a stale copy. A process keeps the lock for the changes already queued behind the
 * one that took it (up to LOCK_HOLD_MAX_MS), and re-reads nothing in between: nobody else wrote.
 * The driver's reads go through it too (state.json is only ever replaced by rename, so any
 * reader sees one whole version).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';

const accessTypeSchema = z.enum(['mount', 'block']);

const volumeRecordSchema = z.object({
  volumeId: z.string(),
  capacityBytes: z.number(),
  /** Sparse image file (privileged) or data directory (unprivileged) that holds the volume. */
  diskPath: z.string(),
  volumeContext: z.record(z.string(), z.string()),
  /** Nodes the volume is controller-published to, with the arguments of that publish. */
  publishedNodes: z.record(z.string(), z.object({ readonly: z.boolean(), accessMode: z.string() })),
  /** Local attachment: the loop device (privileged) or the disk directory (unprivileged). */
  devicePath: z.string().nullable(),
  /** True once a filesystem was created on the disk (privileged mode, mount access). */
  formatted: z.boolean(),
  /**
   * Where the volume is staged, and on which node (`nodeId`; absent in state files written before
   * several nodes could share a state dir: the node of the one process that used it). One node at
   * a time (see README.md, Several nodes).
   */
  staged: z.object({ path: z.string(), accessType: accessTypeSchema, nodeId: z.string().optional() }).nullable(),
  publishedTargets: z.record(
    z.string(),
    z.object({ readonly: z.boolean(), accessType: accessTypeSchema, accessMode: z.string() }),
  ),
  createdAt: z.string(),
  /**
   * True for a CSI ephemeral (inline) volume: created by NodePublishVolume with
   * `csi.storage.k8s.io/ephemeral: "true"`, never controller-published or staged, and deleted by
   * its NodeUnpublishVolume. Absent in state files written before ephemeral support (= false).
   */
  ephemeral: z.boolean().default(false),
  /**
   * The CreateVolume parameters (StorageClass parameters) of a provisioned volume; a repeated
   * CreateVolume of the same name must bring the same ones. Empty for volumes created on demand
   * and in state files written before CreateVolume support.
   */
  parameters: z.record(z.string(), z.string()).default({}),
  /**
   * True after ControllerExpandVolume grew the disk of a volume that may hold a filesystem, until
   * NodeExpandVolume grows the filesystem to match (the controller side never touches it).
   */
  nodeExpansionPending: z.boolean().default(false),
});

export type VolumeRecord = z.infer<typeof volumeRecordSchema>;

const stateFileSchema = z.object({
  version: z.literal(1),
  mode: z.enum(['privileged', 'unprivileged']),
  volumes: z.record(z.string(), volumeRecordSchema),
  /**
   * Ephemeral volumes already deleted by NodeUnpublishVolume: volume id → its target path. A
   * repeated NodeUnpublishVolume of such a volume (the CO retrying) is answered OK instead of
   * NOT_FOUND. Bounded to the last {@link MAX_REMOVED_EPHEMERAL} entries.
   */
  removedEphemeral: z.record(z.string(), z.string()).default({}),
  /**
   * The node ids served by csi-loop processes on this state dir (each adds its own when it
   * starts), sorted. ControllerPublishVolume attaches the disk for these nodes; other node ids are
   * foreign (recorded only, or NOT_FOUND with --strict).
   */
  nodes: z.array(z.string()).default([]),
});

/** How many deleted ephemeral volumes are remembered for idempotent NodeUnpublishVolume. */
export const MAX_REMOVED_EPHEMERAL = 1000;

export type DriverMode = z.infer<typeof stateFileSchema>['mode'];
export type StateFile = z.infer<typeof stateFileSchema>;

export class StateModeMismatchError extends Error {
  override readonly name = 'StateModeMismatchError';
}

export function isStateModeMismatchError(err: unknown): err is StateModeMismatchError {
  return err instanceof StateModeMismatchError;
}

/** How long a change waits for the state dir's lock before failing (a change takes milliseconds to seconds). */
export const STATE_LOCK_TIMEOUT_MS = 60_000;
/** Poll interval while another process holds the lock. */
const LOCK_POLL_MS = 5;
/**
 * The longest a process keeps the lock for the changes queued behind the one that took it. A
 * burst of CSI calls (a node restart confirms every volume: NodeStageVolume and NodePublishVolume
 * each) then pays for one lock file and one read of state.json instead of one per call, while
 * another process sharing the state dir waits at most about this long plus one change.
 */
const LOCK_HOLD_MAX_MS = 50;

/** The state dir's lock stayed held by a live process for STATE_LOCK_TIMEOUT_MS. */
export class StateLockTimeoutError extends Error {
  override readonly name = 'StateLockTimeoutError';
}

export function isStateLockTimeoutError(err: unknown): err is StateLockTimeoutError {
  return err instanceof StateLockTimeoutError;
}

export class StateStore {
  private writeChain: Promise<void> = Promise.resolve();
  /** Serialises {@link exclusive} within this process (the lock file serialises processes). */
  private exclusiveChain: Promise<void> = Promise.resolve();
  /** Calls of {@link exclusive} queued or running. */
  private queued = 0;
  /** When this process took the lock file it still holds; null when it holds none. */
  private lockHeldSince: number | null = null;
  private readonly lockFile: string;
  private readonly tmpFile: string;
  /** The version of state.json that {@link state} holds (read or written by this process); null: unknown. */
  private loadedVersion: FileVersion | null = null;
  /**
   * `JSON.stringify` of the copy in memory as it was read (version {@link loadedVersion}) or last
   * saved; null when unknown. The memory copy only changes inside {@link exclusive}, which
   * compares against it to tell whether a change changed anything.
   */
  private memoryJson: string | null = null;
  /** Number of saves started (only the latest one's outcome describes the memory copy). */
  private saveSeq = 0;

  private constructor(
    private readonly file: string,
    private state: StateFile,
    private readonly mode: DriverMode,
  ) {
    this.lockFile = path.join(path.dirname(file), 'state.lock');
    this.tmpFile = `${file}.${process.pid}.tmp`;
  }

  /**
   * Opens (or creates) the state of `stateDir` and records `nodeId` as a node served on it. A
   * state written in another mode is refused with StateModeMismatchError: its disk paths and
   * attachments mean something else.
   */
  static async open(stateDir: string, mode: DriverMode, nodeId?: string): Promise<StateStore> {
    const file = path.join(stateDir, 'state.json');
    const store = new StateStore(file, emptyState(mode), mode);
    await store.exclusive(() => {
      store.touchAll();
      if (nodeId !== undefined && !store.state.nodes.includes(nodeId)) {
        store.state.nodes = [...store.state.nodes, nodeId].sort();
      }
    });
    return store;
  }

  /**
   * Runs `change` holding the state dir's lock, on a freshly read state, and saves the state
   * afterwards if it changed (also when `change` throws: a CSI call may have changed the host and recorded part
   * of it before failing). Changes of this process run one after another; other processes wait
   * on the lock file.
   */
  exclusive<T>(change: () => Promise<T> | T): Promise<T> {
    this.queued++;
    const run = this.exclusiveChain.then(async () => {
      let failed = true;
      try {
        if (this.lockHeldSince === null) {
          await this.acquireLock();
          this.lockHeldSince = performance.now();
          await this.reload();
        }
        // Else this process held the lock since its last reload: no other process wrote state.json.
        // The state as loaded or last saved, not serialised again (each call would pay O(volumes) for it).
        const before = this.memoryJson ?? JSON.stringify(this.state);
        const savesBefore = this.saveSeq;
        this.access = { records: new Map(), all: false };
        try {
          const result = await change();
          failed = false;
          return result;
        } finally {
          const access = this.access;
          this.access = null;
          await this.writeChain;
          if (this.saveSeq !== savesBefore || access.all || this.recordChanged(access.records)) {
            const after = JSON.stringify(this.state);
            // What the file holds: the state before the change, or what the change saved last (null: that save failed).
            const onFile = this.saveSeq === savesBefore ? before : this.memoryJson;
            if (after !== onFile) await this.save();
          }
        }
      } finally {
        this.queued--;
        // Keep the lock for the changes already queued behind this one (a burst of calls takes it
        // once), unless this one failed (the next starts from a fresh read) or the lock was held
        // for LOCK_HOLD_MAX_MS (another process waiting on it gets a turn).
        const holdOn = !failed && this.queued > 0 && this.lockHeldSince !== null && performance.now() - this.lockHeldSince < LOCK_HOLD_MAX_MS;
        if (!holdOn && this.lockHeldSince !== null) {
          this.lockHeldSince = null;
          await fs.rm(this.lockFile, { force: true });
        }
      }
    });
    this.exclusiveChain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * Re-reads state.json. The driver calls it only through {@link exclusive} (reads too: a reload
   * while a change of this process runs would drop that change); tests use it to look.
   *
   * A file that is still the version this process last read or wrote (same inode, mtime and
   * size: the driver only ever replaces state.json by rename; an edit in place by hand is noticed
   * by its mtime or size) is not read and parsed again: the copy in memory is that version. Each
   * CSI call reloads, so parsing every volume's record on each one made every call cost
   * O(volumes).
   */
  async reload(): Promise<void> {
    let state = emptyState(this.mode);
    let version: FileVersion | null;
    try {
      const handle = await fs.open(this.file, 'r');
      try {
        // The handle's own stat: the version of exactly the bytes read below.
        version = fileVersion(await handle.stat({ bigint: true }));
        if (this.loadedVersion !== null && sameVersion(version, this.loadedVersion)) return;
        state = stateFileSchema.parse(JSON.parse(await handle.readFile('utf8')));
      } finally {
        await handle.close();
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(`cannot read driver state ${this.file}: ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
      }
      version = null;
    }
    if (state.mode !== this.mode) {
      throw new StateModeMismatchError(
        `state in ${path.dirname(this.file)} was written in ${state.mode} mode; refusing to use it in ${this.mode} mode`,
      );
    }
    this.state = state;
    this.loadedVersion = version;
    this.memoryJson = JSON.stringify(state);
  }

  /**
   * What the running change could have modified, so that a change that modified nothing (most
   * CSI calls: a repeated NodeStageVolume or NodePublishVolume of a volume already staged or
   * published, a stats call) costs no serialisation of the whole state: the records it got, each
   * with its JSON from before it got it, or `all` after a call that hands out the whole state or
   * changes its structure. Null outside {@link exclusive}.
   */
  private access: { records: Map<string, string | undefined>; all: boolean } | null = null;

  /** Marks a record as handed to the running change, remembering its JSON before. */
  private touch(volumeId: string): void {
    if (this.access === null || this.access.all || this.access.records.has(volumeId)) return;
    const record = this.state.volumes[volumeId];
    this.access.records.set(volumeId, record === undefined ? undefined : JSON.stringify(record));
  }

  /** Marks the whole state as possibly modified by the running change. */
  private touchAll(): void {
    if (this.access !== null) this.access.all = true;
  }

  /** Whether a record the change got is now different from what it was. */
  private recordChanged(records: ReadonlyMap<string, string | undefined>): boolean {
    for (const [volumeId, before] of records) {
      const record = this.state.volumes[volumeId];
      if ((record === undefined ? undefined : JSON.stringify(record)) !== before) return true;
    }
    return false;
  }

  /** Node ids served on this state dir (see `nodes` in the state file). */
  nodes(): readonly string[] {
    return this.state.nodes;
  }

  get(volumeId: string): VolumeRecord | undefined {
    this.touch(volumeId);
    return this.state.volumes[volumeId];
  }

  /** All volumes, sorted by volume id (the ListVolumes order). */
  list(): VolumeRecord[] {
    this.touchAll();
    return Object.values(this.state.volumes).sort((a, b) => (a.volumeId < b.volumeId ? -1 : a.volumeId > b.volumeId ? 1 : 0));
  }

  put(record: VolumeRecord): void {
    this.touchAll();
    this.state.volumes[record.volumeId] = record;
  }

  /** Forgets a deleted volume (DeleteVolume). */
  remove(volumeId: string): void {
    this.touchAll();
    this.state.volumes = Object.fromEntries(Object.entries(this.state.volumes).filter(([id]) => id !== volumeId));
  }

  /**
   * Forgets an ephemeral volume that was deleted, remembering its target path so that a repeated
   * NodeUnpublishVolume can be recognised (oldest entries dropped beyond the bound).
   */
  removeEphemeral(volumeId: string, targetPath: string): void {
    this.remove(volumeId);
    // Re-inserting moves the id to the end: insertion order is the age order.
    const entries = [...Object.entries(this.state.removedEphemeral).filter(([id]) => id !== volumeId), [volumeId, targetPath] as const];
    this.state.removedEphemeral = Object.fromEntries(entries.slice(Math.max(0, entries.length - MAX_REMOVED_EPHEMERAL)));
  }

  /** The target path a deleted ephemeral volume was published at, if it is remembered. */
  removedEphemeralTarget(volumeId: string): string | undefined {
    return this.state.removedEphemeral[volumeId];
  }

  /** Forgets that `volumeId` was a deleted ephemeral volume (it is being created again). */
  forgetRemovedEphemeral(volumeId: string): void {
    this.touchAll();
    if (this.state.removedEphemeral[volumeId] !== undefined) {
      this.state.removedEphemeral = Object.fromEntries(Object.entries(this.state.removedEphemeral).filter(([id]) => id !== volumeId));
    }
  }

  /** A deep copy of the whole state (for the control API). */
  snapshot(): StateFile {
    return structuredClone(this.state);
  }

  /**
   * Persists the current state; writes are serialised so the last one always wins. Only to be
   * called inside {@link exclusive} (the lock keeps another process from writing in between).
   */
  save(): Promise<void> {
    const json = JSON.stringify(this.state);
    const text = `${JSON.stringify(this.state, null, 2)}\n`;
    const seq = ++this.saveSeq;
    // Until this save is done, the copy in memory is not known to be any version of the file.
    this.loadedVersion = null;
    this.memoryJson = null;
    const next = this.writeChain.then(async () => {
      const handle = await fs.open(this.tmpFile, 'w', 0o600);
      let version: FileVersion;
      try {
        await handle.writeFile(text);
        version = fileVersion(await handle.stat({ bigint: true }));
      } finally {
        await handle.close();
      }
      await fs.rename(this.tmpFile, this.file);
      // Only the latest save describes the copy in memory (a failed one leaves it unknown: the next reload reads the file).
      if (seq === this.saveSeq) {
        this.loadedVersion = version;
        this.memoryJson = json;
      }
    });
    this.writeChain = next.catch(() => undefined);
    return next;
  }

  /**
   * Takes the lock file (O_EXCL create with this pid inside). A lock whose owner process is gone
   * (killed while holding it) is broken; a live owner is waited for up to STATE_LOCK_TIMEOUT_MS.
   */
  private async acquireLock(): Promise<void> {
    const deadline = performance.now() + STATE_LOCK_TIMEOUT_MS;
    for (;;) {
      try {
        await fs.writeFile(this.lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw err;
        }
      }
      const owner = await lockOwner(this.lockFile);
      if (owner !== null && owner !== process.pid && !processAlive(owner)) {
        await breakStaleLock(this.lockFile, owner);
        continue;
      }
      if (performance.now() > deadline) {
        throw new StateLockTimeoutError(`state lock ${this.lockFile} still held by pid ${owner ?? '?'} after ${STATE_LOCK_TIMEOUT_MS} ms`);
      }
      await delay(LOCK_POLL_MS);
    }
  }
}

/** What tells two versions of state.json apart: a replaced file has another inode, one edited in place another mtime or size. */
interface FileVersion {
  ino: bigint;
  mtimeNs: bigint;
  size: bigint;
}

function fileVersion(st: { ino: bigint; mtimeNs: bigint; size: bigint }): FileVersion {
  return { ino: st.ino, mtimeNs: st.mtimeNs, size: st.size };
}

function sameVersion(a: FileVersion, b: FileVersion): boolean {
  return a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.size === b.size;
}

function emptyState(mode: DriverMode): StateFile {
  return { version: 1, mode, volumes: {}, removedEphemeral: {}, nodes: [] };
}

/** The pid in the lock file; null while it is being written (empty) or gone. */
async function lockOwner(lockFile: string): Promise<number | null> {
  try {
    const pid = Number.parseInt(await fs.readFile(lockFile, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return null;
    }
    throw err;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes a lock left by dead process `owner`: renamed away first, and removed only if the
 * renamed file still names `owner` (otherwise a live process took the lock meanwhile and gets it
 * back).
 */
async function breakStaleLock(lockFile: string, owner: number): Promise<void> {
  const aside = `${lockFile}.${process.pid}.stale`;
  try {
    await fs.rename(lockFile, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return;
    }
    throw err;
  }
  if ((await lockOwner(aside)) === owner) {
    await fs.rm(aside, { force: true });
  } else {
    await fs.link(aside, lockFile).catch(() => undefined);
    await fs.rm(aside, { force: true });
  }
}
