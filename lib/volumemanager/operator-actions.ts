/**
 * The operator actions on a running volume manager: the forced TearDown of one pod's volume
 * ("unmount") and "retry now" (clearing an operation's backoff). The kubelet has neither; both
 * exist for the cases the reconciler cannot get out of by itself (an orphaned mount, a TearDown
 * stuck in backoff), so each one re-reads the live state at the moment it acts and refuses
 * unless every safety check passes. Every check is reported, refused or not, so the caller can
 * audit exactly what was evaluated.
 *
 * The forced TearDown's checks, in the order they are reported (the first seven always, the last
 * two only once the first seven passed):
 * 1. `states-synced`: every pod source delivered its initial list and the reconciler synced the
 *    states: the desired state is complete.
 * 2. `reconstruction-done`: the volumes found on disk at start were merged into the states.
 * 3. `pod-not-desired`: the pod is not in the desired state (the populator drops a pod only once
 *    none of its containers can run any more).
 * 4. `pod-absent-from-source`: the pod's source, read live at this moment (never a cache: the
 *    agent GETs from the API server, or re-reads the manifest directory), no longer has the pod,
 *    or has it terminated (phase Succeeded or Failed). A source that cannot answer fails it.
 * 5. `source-no-error`: neither the pod source nor the populator reports an error that may
 *    concern the pod (a failing pod list, an object of the pod that cannot be read…): with such
 *    an error the pod may only look absent.
 * 6. `volume-mounted`: the pod has a mount (or an uncertain mount) of the volume; when this is the
 *    only failed check the answer is "no such mount" rather than a refusal.
 * 7. `no-operation-running`: no operation runs on the volume, for any pod.
 * 8. `rate-limit`: a TearDown of this mount in backoff has its backoff cleared first, which takes
 *    a slot of the same per-node limiter as "retry now"; without a backoff to clear, no slot.
 * 9. `operation-lock`: the TearDown was started through the operation executor under the mount's
 *    operation key (the kubelet's (volume, pod) key of a TearDown), so until it ends no
 *    volume-wide operation and no other operation of this pod on the volume can start (check 7
 *    made sure nothing ran on the volume at all when it started).
 * Checks 1–7 are evaluated after the live read of the pod source, in the same synchronous turn
 * as the start of the TearDown: nothing can change between the last check and taking the lock.
 *
 * Retry now: rate limit (per node), an entry in the pending-operations table matching the key
 * (the table's own matching rules), and not running; the table's `clearBackoff` never bypasses
 * the per-volume serialisation.
 */
import type { Clock } from '../clock/clock.ts';
import { isExponentialBackoff } from '../operationexecutor/exponential-backoff.ts';
import { isAlreadyExists, type NestedPendingOperations, type PendingOperationView } from '../operationexecutor/nested-pending-operations.ts';
import type { OperationExecutor, OperationRecord } from '../operationexecutor/operation-executor.ts';
import { OperationNames } from '../operationexecutor/operation-generator.ts';
import type { MountedVolume } from '../operationexecutor/types.ts';
import { isBlockSpec } from '../volume/spec.ts';
import { EmptyNodeName, EmptyUniquePodName, uniquePodName, type PodUID, type UniquePodName, type UniqueVolumeName } from '../volume/types.ts';
import type { ActualStateOfWorld } from './cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from './cache/desired-state-of-world.ts';
import type { ReconstructionReport } from './reconciler/reconstruct-report.ts';
import { errorMessage } from '../volume/errors.ts';

// PORTS

/** One evaluated safety check: its name, whether it passed, and what was found. */
export interface OperatorCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** A pod's namespace and name, when the source knows them. */
export interface PodRef {
  namespace: string;
  name: string;
}

/** What the pod's source says about one pod, read live. */
export interface PodSourceLookup {
  /** `terminated`: listed in phase Succeeded or Failed (no container can run any more). */
  presence: 'absent' | 'terminated' | 'present';
  /** What was read, for people: `pod default/web (uid u) exists in the API server`. */
  detail: string;
  /** The pod's namespace and name when the source has it; null when absent. */
  pod: PodRef | null;
}

/**
 * The pod source as the forced TearDown needs it: implemented by the agent, because the engine
 * reads no API server and no files of its own.
 */
export interface PodSourceProbe {
  /**
   * Reads the pod from its source now, bypassing every cache (a GET from the API server, a
   * re-read of the manifest directory). Rejects when the source cannot answer.
   */
  lookupPod(podUid: PodUID): Promise<PodSourceLookup>;
  /**
   * The source's current errors that may concern the pod (`pod` is what the lookup found, null
   * when it found nothing): errors of the whole pod list, and errors naming the pod.
   */
  errorsForPod(podUid: PodUID, pod: PodRef | null): readonly { file: string; message: string }[];
}

/** The outcome of {@link OperatorRateLimiter.tryAcquire}. */
export type OperatorRateLimitDecision = { ok: true } | { ok: false; retryAfterMs: number };

/** The per-node limit on clearing backoffs ("retry now", and a forced TearDown in backoff). */
export interface OperatorRateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  /** Takes one slot, or says how long until one frees. */
  tryAcquire(): OperatorRateLimitDecision;
}

// RESULTS

/** The request of a forced TearDown: the pod and its volume (unique name, or the pod's volume name). */
export interface ForceUnmountRequest {
  podUid: string;
  volume: string;
}

/** How a started TearDown ended. */
export interface TearDownOutcome {
  /** `uncertain`: TearDown failed and the mount is now uncertain; the reconciler retries. */
  outcome: 'unmounted' | 'uncertain' | 'failed';
  /** The operation's error, verbatim; null when unmounted. */
  error: string | null;
  finishedAt: number;
}

export type ForceUnmountResult =
  /** A safety check failed; nothing was done. */
  | { kind: 'refused'; checks: OperatorCheck[]; message: string }
  /** Every safety check passed, but the pod has no mount of the volume. */
  | { kind: 'no-such-mount'; checks: OperatorCheck[]; message: string }
  /** The TearDown is in backoff and the per-node limit allows no backoff clear now. */
  | { kind: 'rate-limited'; checks: OperatorCheck[]; message: string; retryAfterMs: number }
  /** The TearDown could not be generated (the plugin refused); nothing runs. */
  | { kind: 'not-started'; checks: OperatorCheck[]; volumeName: UniqueVolumeName; error: string; startedAt: number; finishedAt: number }
  /** The TearDown runs under the lock; `outcome` resolves when it ends (never rejects). */
  | {
      kind: 'started';
      checks: OperatorCheck[];
      volumeName: UniqueVolumeName;
      podName: UniquePodName;
      /** The TearDown's operation name (`volume_unmount`, or `unmap_volume` for block volumes). */
      operationName: string;
      startedAt: number;
      outcome: Promise<TearDownOutcome>;
    };

/** The request of a retry: a table entry's volume and, for pod-keyed entries, pod. */
export interface RetryOperationRequest {
  volume: string;
  podUid: string | null;
}

export type RetryOperationResult =
  | { kind: 'rate-limited'; checks: OperatorCheck[]; message: string; retryAfterMs: number }
  | { kind: 'not-found'; checks: OperatorCheck[]; message: string }
  | { kind: 'running'; checks: OperatorCheck[]; operation: PendingOperationView }
  | { kind: 'cleared'; checks: OperatorCheck[]; operation: PendingOperationView };

// ACTIONS

export interface OperatorActionsOptions {
  dsw: DesiredStateOfWorld;
  asw: ActualStateOfWorld;
  pendingOperations: NestedPendingOperations;
  executor: OperationExecutor;
  clock: Clock;
  podsDir: string;
  /** Every pod source delivered its initial list (`SourcesReady.AllReady`). */
  sourcesReady: () => boolean;
  reconcilerStatesHasBeenSynced: () => boolean;
  reconstructionReport: () => ReconstructionReport;
  /** Clears a backoff of the table and wakes the reconciler (the volume manager's retryNow). */
  clearBackoff: (volumeName: UniqueVolumeName, podName: UniquePodName | null) => 'cleared' | 'not-found' | 'running';
  /** Subscribes to finished-operation records; returns the unsubscribe function. */
  onOperationRecord: (listener: (record: OperationRecord) => void) => () => void;
}

/** The name of the TearDown operation of a mount: unmap for block volumes. */
function tearDownOperationName(mount: Pick<MountedVolume, 'volumeSpec'>): string {
  return isBlockSpec(mount.volumeSpec) ? OperationNames.unmap : OperationNames.unmount;
}

/** The refusal message of a per-node rate limit. */
function rateLimitMessage(limiter: OperatorRateLimiter, retryAfterMs: number): string {
  return `too many retries: at most ${limiter.limit} per ${limiter.windowMs / 1000} s on this node; try again in ${Math.ceil(retryAfterMs / 1000)} s`;
}

/** Collects checks, each with the refusal message it gives when it fails. */
class CheckList {
  readonly checks: OperatorCheck[] = [];
  private readonly reasons: string[] = [];

  add(name: string, ok: boolean, detail: string, reason: string): void {
    this.checks.push({ name, ok, detail });
    this.reasons.push(reason);
  }

  pass(name: string, detail: string): void {
    this.add(name, true, detail, '');
  }

  /** The reason of the first failed check other than `except`; null when none failed. */
  refusal(except?: string): string | null {
    const i = this.checks.findIndex((c) => !c.ok && c.name !== except);
    return i < 0 ? null : (this.reasons[i] ?? null);
  }
}

export class OperatorActions {
  constructor(private readonly options: OperatorActionsOptions) {}

  /**
   * The forced TearDown of one pod's volume, after every safety check (see the file comment).
   * Resolves once the TearDown was started or refused; a started one's outcome follows.
   */
  async forceUnmount(request: ForceUnmountRequest, ports: { source: PodSourceProbe; limiter: OperatorRateLimiter }): Promise<ForceUnmountResult> {
    const podUID = request.podUid as PodUID;
    // The live read first: everything after it runs in one turn, up to taking the lock.
    let lookup: PodSourceLookup | { error: string };
    try {
      lookup = await ports.source.lookupPod(podUID);
    } catch (err) {
      lookup = { error: errorMessage(err) };
    }

    const { dsw, asw, pendingOperations } = this.options;
    const podName = uniquePodName(request.podUid);
    const mounts = asw.getPossiblyMountedVolumesForPod(podName);
    const mount = mounts.find((m) => m.volumeName === request.volume) ?? mounts.find((m) => m.outerVolumeSpecName === request.volume) ?? null;
    const volumeName = (mount?.volumeName ?? request.volume) as UniqueVolumeName;
    const list = new CheckList();

    const sourcesReady = this.options.sourcesReady();
    const reconcilerSynced = this.options.reconcilerStatesHasBeenSynced();
    list.add(
      'states-synced',
      sourcesReady && reconcilerSynced,
      sourcesReady && reconcilerSynced
        ? 'the desired and actual states are synced'
        : [!sourcesReady ? 'the pod sources have not listed every pod yet' : null, !reconcilerSynced ? 'the reconciler has not synced the states yet' : null]
            .filter((s) => s !== null)
            .join('; '),
      'desired and actual states are not synced yet',
    );

    const reconstruction = this.options.reconstructionReport().state;
    list.add(
      'reconstruction-done',
      reconstruction === 'done',
      reconstruction === 'done' ? 'reconstruction has finished' : `reconstruction is ${reconstruction}`,
      `reconstruction has not finished (${reconstruction})`,
    );

    const desiredPod = dsw.getPods().get(podName);
    const wantsVolume = dsw.collectVolumesToMount((v, p) => p === podName && v === volumeName).length > 0;
    const podLabel = desiredPod === undefined ? request.podUid : `${desiredPod.metadata.namespace ?? 'default'}/${desiredPod.metadata.name}`;
    list.add(
      'pod-not-desired',
      desiredPod === undefined,
      desiredPod === undefined ? 'pod is not in the desired state' : `pod ${podLabel} is in the desired state${wantsVolume ? ' and wants this volume' : ''}`,
      wantsVolume ? `pod ${request.podUid} still wants volume ${mount?.outerVolumeSpecName ?? request.volume}` : `pod ${request.podUid} is still in the desired state`,
    );

    if ('error' in lookup) {
      list.add('pod-absent-from-source', false, `the pod source could not be read: ${lookup.error}`, `the pod source could not be read for pod ${request.podUid}: ${lookup.error}`);
    } else {
      list.add('pod-absent-from-source', lookup.presence !== 'present', lookup.detail, `pod ${request.podUid} still exists in its source: ${lookup.detail}`);
    }

    const errors = [
      ...ports.source.errorsForPod(podUID, 'error' in lookup ? null : lookup.pod).map((e) => `${e.file}: ${e.message}`),
      ...dsw.getPodErrors(podName).map((e) => `desired state: ${e}`),
    ];
    list.add(
      'source-no-error',
      errors.length === 0,
      errors.length === 0 ? 'the pod source reports no error that may concern the pod' : errors.join('; '),
      `the pod source reports an error that may concern pod ${request.podUid}: ${errors[0] ?? ''}`,
    );

    list.add(
      'volume-mounted',
      mount !== null,
      mount === null
        ? 'the pod has no mount of this volume in the actual state'
        : mount.volumeMountState === 'VolumeMounted'
          ? 'the volume is mounted for the pod'
          : 'the volume is uncertainly mounted for the pod',
      `pod ${request.podUid} has no mount of volume ${request.volume}`,
    );

    const running = pendingOperations.list().find((op) => op.key.volumeName === volumeName && op.pending);
    const operationName = mount === null ? OperationNames.unmount : tearDownOperationName(mount);
    const keyPod = mount === null ? podName : uniquePodName(mount.podUID);
    const entry = pendingOperations.getOperation(volumeName, keyPod, EmptyNodeName);
    // A TearDown of this mount in backoff: run() would refuse it until the backoff is cleared.
    const inBackoff = entry !== undefined && !entry.pending && !pendingOperations.isOperationSafeToRetry(volumeName, keyPod, EmptyNodeName, operationName) ? entry : undefined;
    list.add(
      'no-operation-running',
      running === undefined,
      running !== undefined
        ? `operation ${running.operationName} is running on the volume${running.key.podName === EmptyUniquePodName ? '' : ` for pod ${running.key.podName}`}`
        : inBackoff !== undefined
          ? `no operation is running; the failed ${inBackoff.operationName} in backoff (${inBackoff.failures} failure(s)) is retried now`
          : 'no operation is running on the volume',
      `an operation (${running?.operationName ?? ''}) is running on volume ${volumeName}`,
    );

    // A missing mount alone is "not found"; with any other failure it is a refusal for that one.
    const refusal = list.refusal('volume-mounted');
    if (refusal !== null) return { kind: 'refused', checks: list.checks, message: refusal };
    if (mount === null) return { kind: 'no-such-mount', checks: list.checks, message: `pod ${request.podUid} has no mount of volume ${request.volume}` };

    if (inBackoff === undefined) {
      list.pass('rate-limit', 'no backoff to clear: the per-node retry limit does not apply');
    } else {
      const decision = ports.limiter.tryAcquire();
      if (!decision.ok) {
        const message = rateLimitMessage(ports.limiter, decision.retryAfterMs);
        list.add('rate-limit', false, message, message);
        return { kind: 'rate-limited', checks: list.checks, message, retryAfterMs: decision.retryAfterMs };
      }
      list.pass('rate-limit', `clearing the backoff of ${inBackoff.operationName}: within ${ports.limiter.limit} retries per ${ports.limiter.windowMs / 1000} s on this node`);
      this.options.clearBackoff(volumeName, keyPod);
    }

    return this.startTearDown(mount, operationName, keyPod, list);
  }

  /**
   * Retry now: clears the backoff of the table entry matching (volume, pod) so the reconciler
   * retries it on its next pass. Takes a slot of the per-node limit first.
   */
  retryOperation(request: RetryOperationRequest, limiter: OperatorRateLimiter): RetryOperationResult {
    const list = new CheckList();
    const what = request.podUid === null ? `volume ${request.volume}` : `volume ${request.volume} of pod ${request.podUid}`;
    const decision = limiter.tryAcquire();
    if (!decision.ok) {
      const message = rateLimitMessage(limiter, decision.retryAfterMs);
      list.add('rate-limit', false, message, message);
      return { kind: 'rate-limited', checks: list.checks, message, retryAfterMs: decision.retryAfterMs };
    }
    list.pass('rate-limit', `within ${limiter.limit} retries per ${limiter.windowMs / 1000} s on this node`);

    const volumeName = request.volume as UniqueVolumeName;
    const podName = request.podUid === null ? EmptyUniquePodName : uniquePodName(request.podUid);
    const op = this.options.pendingOperations.getOperation(volumeName, podName, EmptyNodeName);
    if (op === undefined) {
      const message = `no operation for ${what} in the pending-operations table`;
      list.add('operation-exists', false, message, message);
      return { kind: 'not-found', checks: list.checks, message };
    }
    list.pass('operation-exists', `operation ${op.operationName} on ${what}`);
    if (op.pending) {
      list.add('operation-not-running', false, 'the operation is running now', 'only an operation in backoff can be retried');
      return { kind: 'running', checks: list.checks, operation: op };
    }
    list.pass('operation-not-running', `in backoff after ${op.failures} failure(s)${op.retryAt === null ? '' : `, next retry allowed after ${new Date(op.retryAt).toISOString()}`}`);
    // Same synchronous turn as the lookup: the entry cannot have changed in between.
    this.options.clearBackoff(volumeName, request.podUid === null ? null : podName);
    return { kind: 'cleared', checks: list.checks, operation: op };
  }

  /** Starts the TearDown under the operation executor (the per-volume lock) and follows it to its end. */
  private startTearDown(mount: MountedVolume, operationName: string, keyPod: UniquePodName, list: CheckList): ForceUnmountResult {
    const { asw, executor, clock } = this.options;
    const startedAt = clock.now();
    let settle: (outcome: TearDownOutcome) => void = () => undefined;
    const outcome = new Promise<TearDownOutcome>((resolve) => {
      settle = resolve;
    });
    // While the TearDown holds the key no other operation with it can run, so the first record
    // of this operation on this key after the start is the TearDown's own.
    const unsubscribe = this.options.onOperationRecord((record) => {
      if (record.operationName !== operationName || record.volume !== mount.volumeName || record.pod !== keyPod) return;
      unsubscribe();
      const state = asw.getVolumeMountState(mount.volumeName, mount.podName);
      settle(
        record.outcome === 'success'
          ? { outcome: 'unmounted', error: null, finishedAt: record.finishedAt }
          : { outcome: state === 'VolumeMountUncertain' ? 'uncertain' : 'failed', error: record.error ?? 'unknown error', finishedAt: record.finishedAt },
      );
    });
    try {
      executor.unmountVolume(mount, asw, this.options.podsDir);
    } catch (err) {
      unsubscribe();
      if (isAlreadyExists(err) || isExponentialBackoff(err)) {
        const message = `another operation holds the lock of volume ${mount.volumeName}: ${err.message}`;
        list.add('operation-lock', false, message, message);
        return { kind: 'refused', checks: list.checks, message };
      }
      return { kind: 'not-started', checks: list.checks, volumeName: mount.volumeName, error: errorMessage(err), startedAt, finishedAt: clock.now() };
    }
    list.pass('operation-lock', `${operationName} started through the operation executor under the key of volume ${mount.volumeName} and pod ${keyPod}`);
    return { kind: 'started', checks: list.checks, volumeName: mount.volumeName, podName: keyPod, operationName, startedAt, outcome };
  }
}
