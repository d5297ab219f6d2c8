/**
 * `POST /api/v1/unmount`: a forced TearDown of one pod's volume that the desired state no longer
 * wants: an orphan the reconciler has not cleaned up, or a TearDown stuck in backoff.
 *
 * Safety (operators-and-csi.md Part E, "Unmount a pod's volume"): the kubelet once unmounted
 * volumes of running pods after a restart, so the action is refused unless
 * - the desired and actual states are synced (every pod source listed, the populator ran, the
 *   reconciler synced): the desired state is complete;
 * - reconstruction has finished;
 * - the pod is not in the desired state at all (the populator removes a pod only once none of its
 *   containers can run any more);
 * - no operation runs on the volume for the pod.
 * Every check is evaluated and reported. The TearDown runs through the operation executor, so the
 * per-volume operation lock is held like for any reconciler operation; a failed TearDown in
 * backoff has its backoff cleared first (that is the point of forcing it).
 */
import type { UnmountRequest, UnmountResponse } from '../../lib/api/actions.ts';
import { operationKey, type Check } from '../../lib/api/snapshot.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import { isExponentialBackoff } from '../../lib/operationexecutor/exponential-backoff.ts';
import { isAlreadyExists } from '../../lib/operationexecutor/nested-pending-operations.ts';
import type { OperationRecord } from '../../lib/operationexecutor/operation-executor.ts';
import { OperationNames } from '../../lib/operationexecutor/operation-generator.ts';
import type { MountedVolume } from '../../lib/operationexecutor/types.ts';
import { isBlockSpec } from '../../lib/volume/spec.ts';
import { EmptyNodeName, type UniquePodName, type UniqueVolumeName } from '../../lib/volume/types.ts';
import type { VolumeManager } from '../../lib/volumemanager/volume-manager.ts';
import type { ActionContext } from './action-context.ts';
import { errorAnswer, jsonAnswer, type HttpAnswer } from './http-response.ts';

/** How long the request waits for the TearDown's outcome before answering 202 (still running). */
export const DEFAULT_UNMOUNT_OUTCOME_TIMEOUT_MS = 30_000;

/**
 * The 202 body when the TearDown was started but had not finished within the wait. Not part of
 * lib/api's contract (which has no "accepted" shape yet); the operation's outcome shows up in the
 * snapshot's `operations` and `actual` sections.
 */
export interface UnmountStillRunningBody {
  podUid: string;
  volume: string;
  status: 'running';
  /** The operation's key (`operationKey`), as it appears in `operations[]` while it runs. */
  operation: string;
  message: string;
  checks: Check[];
  startedAt: number;
}

export interface UnmountContext extends ActionContext {
  /** The wait bound for the outcome (default 30 s of the runtime clock). */
  outcomeTimeoutMs?: number;
  /** Aborted when the server closes: stop waiting and answer "still running". */
  signal: AbortSignal;
}

/** The safety checks and the refusal message of the first failed one. */
interface Evaluation {
  checks: Check[];
  refusal: string | null;
}

/** The pod's mount the request names: by unique volume name first, else by the pod's volume name. */
function findMount(vm: VolumeManager, podUid: string, volume: string): MountedVolume | null {
  const mounts = vm.asw.getPossiblyMountedVolumesForPod(podUid as UniquePodName);
  return mounts.find((m) => m.volumeName === volume) ?? mounts.find((m) => m.outerVolumeSpecName === volume) ?? null;
}

function evaluate(ctx: UnmountContext, podUid: string, volume: string, mount: MountedVolume | null): Evaluation {
  const vm = ctx.runtime.volumeManager;
  const podName = podUid as UniquePodName;
  const volumeName = (mount?.volumeName ?? volume) as UniqueVolumeName;
  const checks: Check[] = [];
  let refusal: string | null = null;
  const check = (name: string, ok: boolean, detail: string, reason: string): void => {
    checks.push({ name, ok, detail });
    if (!ok && refusal === null) refusal = reason;
  };

  const reconcilerSynced = vm.reconcilerStatesHasBeenSynced();
  const sourcesSynced = ctx.runtime.sourcesSynced();
  check(
    'states-synced',
    reconcilerSynced && sourcesSynced,
    reconcilerSynced && sourcesSynced
      ? 'the desired and actual states are synced'
      : [!sourcesSynced ? 'the pod sources have not listed every pod yet' : null, !reconcilerSynced ? 'the reconciler has not synced the states yet' : null]
          .filter((s) => s !== null)
          .join('; '),
    'desired and actual states are not synced yet',
  );

  const reconstruction = vm.getReconstructionReport();
  check(
    'reconstruction-done',
    reconstruction.state === 'done',
    reconstruction.state === 'done' ? 'reconstruction has finished' : `reconstruction is ${reconstruction.state}`,
    `reconstruction has not finished (${reconstruction.state})`,
  );

  const desiredPod = vm.dsw.getPods().get(podName);
  const wantsVolume = vm.dsw.collectVolumesToMount((v, p) => p === podName && v === volumeName).length > 0;
  const podLabel = desiredPod === undefined ? podUid : `${desiredPod.metadata.namespace ?? 'default'}/${desiredPod.metadata.name}`;
  check(
    'pod-not-desired',
    desiredPod === undefined,
    desiredPod === undefined ? 'pod is not in the desired state' : `pod ${podLabel} is in the desired state${wantsVolume ? ' and wants this volume' : ''}`,
    wantsVolume ? `pod ${podUid} still wants volume ${mount?.outerVolumeSpecName ?? volume}` : `pod ${podUid} is still in the desired state`,
  );

  check(
    'volume-mounted',
    mount !== null,
    mount === null
      ? 'the pod has no mount of this volume in the actual state'
      : mount.volumeMountState === 'VolumeMounted'
        ? 'the volume is mounted for the pod'
        : 'the volume is uncertainly mounted for the pod',
    `pod ${podUid} has no mount of volume ${volume}`,
  );

  const ops = vm.getPendingOperations().filter(
    (op) => op.key.volumeName === volumeName && (op.key.podName === '' || op.key.podName === podName),
  );
  const running = ops.find((op) => op.pending);
  const teardownInBackoff = ops.find((op) => !op.pending && op.operationName === teardownOperationName(mount));
  check(
    'no-operation-running',
    running === undefined,
    running !== undefined
      ? `operation ${running.operationName} is running on the volume`
      : teardownInBackoff !== undefined
        ? `no operation is running; the failed ${teardownInBackoff.operationName} in backoff (${teardownInBackoff.failures} failure(s)) is retried now`
        : 'no operation is running on the volume for the pod',
    `an operation (${running?.operationName ?? ''}) is running on volume ${volumeName}`,
  );
  return { checks, refusal };
}

function teardownOperationName(mount: MountedVolume | null): string {
  return mount !== null && isBlockSpec(mount.volumeSpec) ? OperationNames.unmap : OperationNames.unmount;
}

/** Starts the TearDown under the operation lock, clearing a same-operation backoff first. */
function startTearDown(vm: VolumeManager, mount: MountedVolume, podsDir: string): void {
  try {
    vm.operationExecutor.unmountVolume(mount, vm.asw, podsDir);
  } catch (err) {
    if (!isExponentialBackoff(err)) throw err;
    vm.retryNow(mount.volumeName, mount.podName);
    vm.operationExecutor.unmountVolume(mount, vm.asw, podsDir);
  }
}

type TearDownOutcome = { kind: 'record'; record: OperationRecord } | { kind: 'left-table' } | { kind: 'timeout' };

/**
 * Waits for the TearDown started just now: its operation record (the first record of this
 * operation on this key that is not in `before`), or — if records moved on so fast that it was
 * dropped from the bounded list — the operation leaving the table. Bounded by `timeoutMs` of the
 * runtime clock and by `signal`.
 */
function waitForTearDown(
  vm: VolumeManager,
  clock: Clock,
  mount: MountedVolume,
  operationName: string,
  before: ReadonlySet<OperationRecord>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<TearDownOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const cleanups: (() => void)[] = [];
    const finish = (outcome: TearDownOutcome): void => {
      if (settled) return;
      settled = true;
      for (const cleanup of cleanups) cleanup();
      resolve(outcome);
    };
    const check = (): void => {
      const record = vm
        .getRecentOperationRecords()
        .find((r) => !before.has(r) && r.operationName === operationName && r.volume === mount.volumeName && r.pod === mount.podName);
      if (record !== undefined) finish({ kind: 'record', record });
      else if (!vm.operationExecutor.isOperationPending(mount.volumeName, mount.podName, EmptyNodeName)) finish({ kind: 'left-table' });
    };
    const onAbort = (): void => {
      finish({ kind: 'timeout' });
    };
    cleanups.push(vm.onChange(check));
    const timer = clock.setTimeout(onAbort, timeoutMs);
    cleanups.push(() => {
      clock.clearTimeout(timer);
    });
    signal.addEventListener('abort', onAbort);
    cleanups.push(() => {
      signal.removeEventListener('abort', onAbort);
    });
    if (signal.aborted) onAbort();
    check();
  });
}

/** The API outcome of a finished TearDown, from its record or (record dropped) from the actual state. */
function tearDownResult(vm: VolumeManager, mount: MountedVolume, outcome: TearDownOutcome & { kind: 'record' | 'left-table' }): Pick<UnmountResponse, 'outcome' | 'error'> {
  const state = vm.asw.getVolumeMountState(mount.volumeName, mount.podName);
  if (outcome.kind === 'record') {
    if (outcome.record.outcome === 'success') return { outcome: 'unmounted', error: null };
    // The generator marks the mount uncertain when TearDown itself failed; the reconciler retries.
    return { outcome: state === 'VolumeMountUncertain' ? 'uncertain' : 'failed', error: outcome.record.error ?? 'unknown error' };
  }
  if (state === 'VolumeNotMounted') return { outcome: 'unmounted', error: null };
  return { outcome: state === 'VolumeMountUncertain' ? 'uncertain' : 'failed', error: 'the operation finished but its record is no longer kept' };
}

/** Runs one unmount request: checks, TearDown, outcome; every outcome is audited. */
/** Why observe mode refuses the managed-mode actions. */
export const OBSERVE_MODE_REFUSAL =
  'this agent observes a kubelet (--mode=observe): it never unmounts or retries the kubelet\'s operations; directories of pods gone from the API can be cleaned up with POST /api/v1/orphans/cleanup';

export async function unmountVolume(ctx: UnmountContext, request: UnmountRequest): Promise<HttpAnswer> {
  const { runtime, audit, caller } = ctx;
  const vm = runtime.volumeManager;
  const { podUid, volume } = request;
  const target = `${podUid}/${volume}`;
  if (vm.planOnly) {
    // Observe mode: the mounts are the kubelet's. Refused before any check looks at them.
    const message = OBSERVE_MODE_REFUSAL;
    const checks = [{ name: 'managed-mode', ok: false, detail: 'the agent runs with --mode=observe beside a kubelet' }];
    audit.record({ caller, action: 'unmount', target, checks, result: 'refused', message });
    return errorAnswer('conflict', message, { checks });
  }
  const mount = findMount(vm, podUid, volume);
  const { checks, refusal } = evaluate(ctx, podUid, volume, mount);
  const refuse = (answer: HttpAnswer, message: string): HttpAnswer => {
    audit.record({ caller, action: 'unmount', target, checks, result: 'refused', message });
    return answer;
  };

  // A failed safety check is a 409 (with every check); a request naming no mount is a 404.
  const safetyFailed = checks.some((c) => !c.ok && c.name !== 'volume-mounted');
  if (safetyFailed) {
    const message = refusal ?? 'a safety check failed';
    return refuse(errorAnswer('conflict', message, { checks }), message);
  }
  if (mount === null) {
    const message = `pod ${podUid} has no mount of volume ${volume}`;
    return refuse(errorAnswer('not-found', message), message);
  }

  const operationName = teardownOperationName(mount);
  const startedAt = runtime.clock.now();
  const before = new Set(vm.getRecentOperationRecords());
  try {
    startTearDown(vm, mount, `${runtime.rootDir}/pods`);
  } catch (err) {
    if (isAlreadyExists(err) || isExponentialBackoff(err)) {
      const message = `another operation holds the lock of volume ${mount.volumeName}`;
      checks.push({ name: 'operation-lock', ok: false, detail: message });
      return refuse(errorAnswer('conflict', message, { checks }), message);
    }
    const error = err instanceof Error ? err.message : String(err);
    audit.record({ caller, action: 'unmount', target, checks, result: 'failed', message: error });
    const body: UnmountResponse = { podUid, volume: mount.volumeName, outcome: 'failed', error, checks, startedAt, finishedAt: runtime.clock.now() };
    return jsonAnswer(200, body);
  }
  runtime.logger.info('unmount: TearDown started', { caller, podUid, volume: mount.volumeName, operation: operationName });

  const outcome = await waitForTearDown(
    vm,
    runtime.clock,
    mount,
    operationName,
    before,
    ctx.outcomeTimeoutMs ?? DEFAULT_UNMOUNT_OUTCOME_TIMEOUT_MS,
    ctx.signal,
  );
  if (outcome.kind === 'timeout') {
    const key = operationKey({ operationName, volume: mount.volumeName, podUid: mount.podName, nodeName: null });
    const message = 'TearDown started and is still running; its outcome will show in the snapshot (operations, actual state)';
    audit.record({ caller, action: 'unmount', target, checks, result: 'succeeded', message });
    const body: UnmountStillRunningBody = { podUid, volume: mount.volumeName, status: 'running', operation: key, message, checks, startedAt };
    return jsonAnswer(202, body);
  }
  const result = tearDownResult(vm, mount, outcome);
  audit.record({
    caller,
    action: 'unmount',
    target,
    checks,
    result: result.outcome === 'unmounted' ? 'succeeded' : 'failed',
    message: result.error,
  });
  const body: UnmountResponse = { podUid, volume: mount.volumeName, ...result, checks, startedAt, finishedAt: runtime.clock.now() };
  return jsonAnswer(200, body);
}
