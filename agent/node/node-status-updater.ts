/**
 * The volume half of the kubelet's node status update (`setNodeStatus` → `VolumesInUse` setter,
 * then `MarkVolumesAsReportedInUse`): the handshake with the attach/detach controller.
 *
 * Contract, as the kubelet:
 * - Nothing is reported until the reconciler's states have been synced (after reconstruction and
 *   the first populator pass): reporting a partial list would let the controller detach volumes
 *   that are still mounted.
 * - The report is `node.status.volumesInUse` = `GetVolumesInUse()` (sorted), sent as a strategic
 *   merge patch of the `status` subresource. Only after the API server accepted it are the volumes
 *   marked reported in use, with the list the server returned — the reconciler's
 *   VerifyControllerAttachedVolume refuses to proceed for a volume not reported yet.
 * - A failed patch changes nothing locally; the next attempt comes at the next period or change.
 *
 * Deliberate difference: the kubelet reports every `--node-status-update-frequency` (10 s). This
 * agent also reports shortly after any change of the list (debounced), so a new pod's volume is
 * reported in milliseconds rather than up to 10 s later; the periodic report stays as the
 * safety net and re-asserts the list if something else overwrote it.
 */
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import type { UniqueVolumeName } from '../../lib/volume/types.ts';

/** The part of the volume manager the updater reads and marks. */
export interface VolumesInUseProvider {
  getVolumesInUse(): UniqueVolumeName[];
  reconcilerStatesHasBeenSynced(): boolean;
  markVolumesAsReportedInUse(volumes: readonly string[]): void;
}

export interface NodeStatusUpdaterOptions {
  volumeManager: VolumesInUseProvider;
  /**
   * Patches `node.status.volumesInUse` to exactly `volumes` (with `--register-node`, in the same
   * patch as the rest of the node status); resolves with the node's `status.volumesInUse` as the
   * API server returned it. `null` (only with `reportBeforeSync`): the volume manager has not
   * synced; the rest of the status is sent and `volumesInUse` is left as it is (the kubelet's
   * VolumesInUse setter skips the field until then).
   */
  patchVolumesInUse(volumes: readonly string[] | null): Promise<string[]>;
  /**
   * The periodic report also runs before the volume manager synced, with `volumes` null (the
   * registered node's heartbeat must not wait for reconstruction). Default false: nothing is
   * sent before the sync.
   */
  reportBeforeSync?: boolean;
  clock: Clock;
  /** `--node-status-update-frequency`. */
  periodMs: number;
  /** Delay between a change and its report; several changes in this window make one patch. */
  debounceMs?: number;
  logger: Logger;
  /** Called after every attempt (the agent republishes its state). */
  onReport?: (report: VolumesInUseReport) => void;
}

/** The last attempt, for the snapshot and logs. */
export interface VolumesInUseReport {
  at: number;
  volumes: string[];
  ok: boolean;
  error: string | null;
}

const defaultVolumesInUseDebounceMs = 100;

export class NodeStatusUpdater {
  private readonly o: NodeStatusUpdaterOptions;
  private periodTimer: TimerHandle | null = null;
  private debounceTimer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private started = false;
  /** What the API server last confirmed; null before the first successful patch. */
  private confirmed: string[] | null = null;
  private last: VolumesInUseReport | null = null;

  constructor(options: NodeStatusUpdaterOptions) {
    this.o = options;
  }

  /** Starts the periodic report; with `reportBeforeSync` the first one is sent at once. */
  start(): void {
    this.started = true;
    const tick = (): void => {
      if (this.stopped) return;
      void this.sync(true);
      this.periodTimer = this.o.clock.setTimeout(tick, this.o.periodMs);
    };
    if (this.o.reportBeforeSync === true) tick();
    else this.periodTimer = this.o.clock.setTimeout(tick, this.o.periodMs);
    this.kick();
  }

  /** Something changed: report soon (debounced) if the list differs from the confirmed one. Ignored before {@link start}. */
  kick(): void {
    if (!this.started || this.stopped || this.debounceTimer !== null) return;
    this.debounceTimer = this.o.clock.setTimeout(() => {
      this.debounceTimer = null;
      void this.sync(false);
    }, this.o.debounceMs ?? defaultVolumesInUseDebounceMs);
  }

  /** The last attempt, or null before the first. */
  lastReport(): VolumesInUseReport | null {
    return this.last;
  }

  /** Stops the timers and waits for a patch in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.periodTimer !== null) this.o.clock.clearTimeout(this.periodTimer);
    if (this.debounceTimer !== null) this.o.clock.clearTimeout(this.debounceTimer);
    this.periodTimer = null;
    this.debounceTimer = null;
    await this.running;
  }

  /**
   * One report. `force` patches even when the list equals the confirmed one (the periodic
   * re-assertion); otherwise an unchanged list is skipped. One patch at a time: a call during a
   * patch schedules one more run after it.
   */
  sync(force: boolean): Promise<void> {
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = this.run(force).finally(() => {
      this.running = null;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.sync(false);
      }
    });
    return this.running;
  }

  private async run(force: boolean): Promise<void> {
    const vm = this.o.volumeManager;
    if (!vm.reconcilerStatesHasBeenSynced()) {
      if (force && this.o.reportBeforeSync === true) await this.reportWithoutVolumes();
      return;
    }
    const volumes: string[] = vm.getVolumesInUse();
    if (!force && this.confirmed !== null && sameList(this.confirmed, volumes)) return;
    const at = this.o.clock.now();
    try {
      const reported = await this.o.patchVolumesInUse(volumes);
      this.confirmed = reported;
      vm.markVolumesAsReportedInUse(reported);
      this.last = { at, volumes: reported, ok: true, error: null };
      if (!sameList(reported, volumes)) {
        this.o.logger.warn(`node.status.volumesInUse after the update differs from the report: sent ${volumes.length}, got ${reported.length}`);
      }
    } catch (err) {
      const message = errorMessage(err);
      this.last = { at, volumes, ok: false, error: message };
      this.o.logger.error(`Error updating node status, will retry: ${message}`);
    }
    this.o.onReport?.(this.last);
  }

  /** The status without `volumesInUse` (before the sync); nothing is marked reported. */
  private async reportWithoutVolumes(): Promise<void> {
    try {
      await this.o.patchVolumesInUse(null);
    } catch (err) {
      this.o.logger.error(`Error updating node status, will retry: ${errorMessage(err)}`);
    }
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
