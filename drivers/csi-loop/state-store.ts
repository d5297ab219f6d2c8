/**
 * The driver's persistent state: one JSON file (`<state-dir>/state.json`) holding every volume the
 * driver knows, its capacity, where it is attached, staged and published. It is rewritten
 * atomically (temp file + rename) after every change, so a restarted driver continues where the
 * previous process stopped.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
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
  staged: z.object({ path: z.string(), accessType: accessTypeSchema }).nullable(),
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

export class StateStore {
  private writeChain: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly state: StateFile,
  ) {}

  /**
   * Opens (or creates) the state of `stateDir`. A state written in another mode is refused with
   * StateModeMismatchError: its disk paths and attachments mean something else.
   */
  static async open(stateDir: string, mode: DriverMode): Promise<StateStore> {
    const file = path.join(stateDir, 'state.json');
    let state: StateFile = { version: 1, mode, volumes: {}, removedEphemeral: {} };
    try {
      state = stateFileSchema.parse(JSON.parse(await fs.readFile(file, 'utf8')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(`cannot read driver state ${file}: ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
      }
    }
    if (state.mode !== mode) {
      throw new StateModeMismatchError(
        `state in ${stateDir} was written in ${state.mode} mode; refusing to use it in ${mode} mode`,
      );
    }
    const store = new StateStore(file, state);
    await store.save();
    return store;
  }

  get(volumeId: string): VolumeRecord | undefined {
    return this.state.volumes[volumeId];
  }

  /** All volumes, sorted by volume id (the ListVolumes order). */
  list(): VolumeRecord[] {
    return Object.values(this.state.volumes).sort((a, b) => (a.volumeId < b.volumeId ? -1 : a.volumeId > b.volumeId ? 1 : 0));
  }

  put(record: VolumeRecord): void {
    this.state.volumes[record.volumeId] = record;
  }

  /** Forgets a deleted volume (DeleteVolume). */
  remove(volumeId: string): void {
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
    if (this.state.removedEphemeral[volumeId] !== undefined) {
      this.state.removedEphemeral = Object.fromEntries(Object.entries(this.state.removedEphemeral).filter(([id]) => id !== volumeId));
    }
  }

  /** A deep copy of the whole state (for the control API). */
  snapshot(): StateFile {
    return structuredClone(this.state);
  }

  /** Persists the current state; writes are serialised so the last one always wins. */
  save(): Promise<void> {
    const text = `${JSON.stringify(this.state, null, 2)}\n`;
    const next = this.writeChain.then(async () => {
      const tmp = `${this.file}.tmp`;
      await fs.writeFile(tmp, text, { mode: 0o600 });
      await fs.rename(tmp, this.file);
    });
    this.writeChain = next.catch(() => undefined);
    return next;
  }
}
