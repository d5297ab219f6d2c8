/**
 * Test support: an {@link AgentRuntime} around the engine test harness (fake plugin, in-memory
 * pod source, fake clock), with switchable source sync, settable source errors/drivers/events,
 * and a logger that keeps every line.
 */
import type { ContainerState, Driver, NodeCondition, RecentEvent, SourceError } from '../../../lib/api/snapshot.ts';
import type { BlockersQuery, BlockersResponse, MountHealth, UnmountBlockers } from '../../../lib/api/mount-health.ts';
import type { FakeClock } from '../../../lib/clock/fake-clock.ts';
import type { NodeName, PodUID } from '../../../lib/volume/types.ts';
import type { Harness } from '../../../lib/volumemanager/testing/harness.ts';
import type { PodSourceLookup, PodSourceProbe, VolumeManager } from '../../../lib/volumemanager/index.ts';
import type { AgentRuntime, MounterInfo, ResyncFindings } from '../../runtime.ts';
import { RecordingLogger } from '../../../lib/volume/testing/recording-logger.ts';

/** One logged line. */
/** The runtime the server tests run against. */
export class FakeAgentRuntime implements AgentRuntime {
  readonly nodeName: NodeName;
  readonly version = '0.1.0-test';
  readonly startedAt: number;
  readonly clock: FakeClock;
  readonly logger = new RecordingLogger();
  readonly volumeManager: VolumeManager;
  readonly mounter: MounterInfo = { kind: 'unprivileged', privileged: false, reason: 'tests' };
  readonly rootDir: string;
  /** What `sourcesSynced()` answers; setting it notifies as a source does. */
  get synced(): boolean {
    return this.sourcesAreSynced;
  }

  set synced(value: boolean) {
    if (value === this.sourcesAreSynced) return;
    this.sourcesAreSynced = value;
    this.notify();
  }

  private sourcesAreSynced = true;
  /** How many times `resync()` ran. */
  resyncs = 0;
  /** When set, `resync()` rejects with it. */
  resyncError: Error | null = null;
  /**
   * What the live pod lookup answers; by default the harness's pod source (present when listed).
   * Tests replace it to play a source whose live answer differs from the engine's cache.
   */
  podLookup: (podUid: PodUID) => Promise<PodSourceLookup> = (podUid) =>
    Promise.resolve(
      this.harness.pods.pods.has(podUid)
        ? { presence: 'present', detail: `pod ${podUid} is listed`, pod: { namespace: 'default', name: podUid } }
        : { presence: 'absent', detail: `no pod ${podUid} in the source`, pod: null },
    );
  /** How many live pod lookups ran. */
  podLookups = 0;
  /** The probe the server hands the engine: {@link podLookup}, and every source error. */
  readonly podSource: PodSourceProbe = {
    lookupPod: (podUid) => {
      this.podLookups++;
      return this.podLookup(podUid);
    },
    errorsForPod: () => this.sourceErrorList,
  };
  private sourceErrorList: SourceError[] = [];
  private driverList: Driver[] = [];
  private conditions: NodeCondition[] | null = null;
  private events: RecentEvent[] = [];
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly harness: Harness,
    /** How many events the ring keeps. */
    private readonly maxEvents = 50,
  ) {
    this.nodeName = harness.vm.nodeName;
    this.clock = harness.clock;
    this.startedAt = harness.clock.now();
    this.volumeManager = harness.vm;
    this.rootDir = harness.rootDir;
  }

  sourceErrors(): SourceError[] {
    return this.sourceErrorList;
  }

  drivers(): Driver[] {
    return this.driverList;
  }

  recentEvents(): RecentEvent[] {
    return this.events;
  }

  sourcesSynced(): boolean {
    return this.sourcesAreSynced;
  }

  /** A verification pass: the engine's batched attach verification, nothing rescanned. */
  async resync(): Promise<ResyncFindings> {
    this.resyncs++;
    if (this.resyncError !== null) throw this.resyncError;
    const startedAt = this.clock.now();
    const result = await this.volumeManager.verifyAttachedVolumes();
    return {
      startedAt,
      finishedAt: result.finishedAt,
      rescanned: { volumes: 0, mountPoints: 0 },
      attachVerification: { checked: result.checked, foundDetached: result.foundDetached, errors: result.errors },
      changes: result.foundDetached.map((v) => `volume ${v}: found detached`),
    };
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Appends an event to the ring and notifies. */
  emitEvent(event: Omit<RecentEvent, 'time'>): void {
    this.events = [...this.events, { time: this.clock.now(), ...event }].slice(-this.maxEvents);
    this.notify();
  }

  setSourceErrors(errors: SourceError[]): void {
    this.sourceErrorList = errors;
    this.notify();
  }

  setDrivers(drivers: Driver[]): void {
    this.driverList = drivers;
    this.notify();
  }

  /** The Node's conditions as a node informer would see them (null: no Node known). */
  nodeConditions(): NodeCondition[] | null {
    return this.conditions;
  }

  setNodeConditions(conditions: NodeCondition[] | null): void {
    this.conditions = conditions;
    this.notify();
  }

  /** The snapshot's `mountHealth` (absent: none); set by tests. */
  mountHealth: (() => MountHealth[]) | undefined = undefined;
  /** The snapshot's `unmountBlockers` (absent: none); set by tests. */
  unmountBlockers: (() => UnmountBlockers[]) | undefined = undefined;
  /** `GET /api/v1/volumes/blockers` (absent: 404); set by tests. */
  findBlockers: ((query: BlockersQuery) => Promise<BlockersResponse>) | undefined = undefined;

  /** Tells the server something the runtime answers changed (what the agent's own parts do after a change). */
  notifyChanged(): void {
    this.notify();
  }

  private readonly containers = new Map<string, readonly ContainerState[]>();

  /** The containers' states of a pod as the API source would keep them (undefined: none). */
  containerStates(uid: string): readonly ContainerState[] | undefined {
    return this.containers.get(uid);
  }

  /** Replaces a pod's containers' states (a new frozen array, as the source does) and notifies. */
  setContainerStates(uid: string, states: readonly ContainerState[] | undefined): void {
    if (states === undefined) this.containers.delete(uid);
    else this.containers.set(uid, Object.freeze([...states]));
    this.notify();
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}
