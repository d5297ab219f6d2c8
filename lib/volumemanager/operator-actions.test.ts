import { afterEach, describe, expect, it } from 'vitest';
import { isAlreadyExists } from '../operationexecutor/nested-pending-operations.ts';
import { specFromVolume } from '../volume/spec.ts';
import { FailOnSetupVolumeName } from '../volume/testing/fake-volume-plugin.ts';
import { EmptyNodeName, EmptyUniquePodName, uniquePodName, uniqueVolumeName, type PodUID } from '../volume/types.ts';
import {
  OperatorActions,
  type ForceUnmountResult,
  type OperatorActionsOptions,
  type OperatorRateLimiter,
  type PodSourceLookup,
  type PodSourceProbe,
} from './operator-actions.ts';
import { gcePdVolume, Harness, makePod } from './testing/harness.ts';
import { isPlanOnlyModeError } from './index.ts';
import { SCRIPTED_TEARDOWN_ERROR, ScriptedTearDownPlugin } from './testing/scripted-teardown-plugin.ts';

const POD1 = uniquePodName('pod1uid');
const DEVICE1 = uniqueVolumeName('fake-plugin/fake-device1');
const ABSENT: PodSourceLookup = { presence: 'absent', detail: 'no pod pod1uid in the source', pod: null };

/** A limiter with a fixed number of slots; counts the slots taken. */
class SlotLimiter implements OperatorRateLimiter {
  readonly limit = 10;
  readonly windowMs = 10_000;
  taken = 0;
  constructor(private slots: number) {}
  tryAcquire(): { ok: true } | { ok: false; retryAfterMs: number } {
    if (this.slots <= 0) return { ok: false, retryAfterMs: 4_200 };
    this.slots--;
    this.taken++;
    return { ok: true };
  }
}

/** A pod source whose live answer and errors the test sets; counts the lookups. */
class ScriptedSource implements PodSourceProbe {
  lookups = 0;
  answer: () => Promise<PodSourceLookup> = () => Promise.resolve(ABSENT);
  errors: { file: string; message: string }[] = [];
  lookupPod(podUid: PodUID): Promise<PodSourceLookup> {
    expect(podUid).toBe(POD1);
    this.lookups++;
    return this.answer();
  }
  errorsForPod(): { file: string; message: string }[] {
    return this.errors;
  }
}

let harness: Harness | undefined;
let plugin: ScriptedTearDownPlugin;
/** Ends an operation a test started by hand (it never ends by itself). */
let releaseHeld = (): void => undefined;
/** An operation that runs until {@link releaseHeld}. */
function heldOperation(operationName: string) {
  return {
    operationName,
    operationFunc: () =>
      new Promise<Record<string, never>>((resolve) => {
        releaseHeld = () => {
          resolve({});
        };
      }),
  };
}
afterEach(async () => {
  plugin.release();
  releaseHeld();
  await harness?.close();
  harness = undefined;
});

/** pod1's volume mounted and synced; the loops run. */
async function mounted(): Promise<Harness> {
  plugin = new ScriptedTearDownPlugin();
  const h = new Harness({ fakePlugin: plugin });
  harness = h;
  h.pods.add(makePod([gcePdVolume()]));
  h.start();
  await h.until(() => h.asw.getMountedVolumes().length === 1 && h.vm.reconcilerStatesHasBeenSynced());
  return h;
}

/**
 * pod1's volume mounted, then an orphan: the loops stop (so the reconciler does not clean it up
 * itself) and the pod leaves the pod source and the desired state.
 */
async function orphan(): Promise<Harness> {
  const h = await mounted();
  await h.vm.stop();
  h.pods.delete(POD1);
  h.dsw.deletePodFromVolume(POD1, DEVICE1);
  return h;
}

/** Puts pod1 back into the desired state with its volume (as the populator would). */
function wantVolumeAgain(h: Harness): void {
  h.dsw.addPodToVolume(POD1, makePod([gcePdVolume()]), specFromVolume(gcePdVolume()), 'volume-name', '', []);
}

const failedChecks = (r: ForceUnmountResult): string[] => r.checks.filter((c) => !c.ok).map((c) => c.name);

/** Runs a started TearDown to its end on fake time. */
async function outcomeOf(h: Harness, r: ForceUnmountResult) {
  if (r.kind !== 'started') throw new Error(`expected a started TearDown, got ${r.kind}`);
  let done: Awaited<typeof r.outcome> | null = null;
  void r.outcome.then((o) => {
    done = o;
  });
  await h.until(() => done !== null);
  return r.outcome;
}

describe('OperatorActions.forceUnmount', () => {
  it('tears an orphan down under the operation lock after every check, and resolves its outcome', async () => {
    // Arrange
    const h = await orphan();
    const source = new ScriptedSource();
    const limiter = new SlotLimiter(10);

    // Act
    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter });
    const heldDuringTearDown = h.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName);
    const outcome = await outcomeOf(h, result);

    // Assert
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['states-synced', true],
      ['reconstruction-done', true],
      ['pod-not-desired', true],
      ['pod-absent-from-source', true],
      ['source-no-error', true],
      ['volume-mounted', true],
      ['no-operation-running', true],
      ['rate-limit', true],
      ['operation-lock', true],
    ]);
    expect(result).toMatchObject({ kind: 'started', volumeName: DEVICE1, podName: POD1, operationName: 'volume_unmount' });
    expect(heldDuringTearDown).toBe(true);
    expect(outcome).toEqual({ outcome: 'unmounted', error: null, finishedAt: h.clock.now() });
    expect(source.lookups).toBe(1);
    expect(limiter.taken).toBe(0);
    expect(plugin.counts.tearDown).toBe(1);
    expect(h.asw.getPossiblyMountedVolumesForPod(POD1)).toEqual([]);
  });

  it('finds the mount by the pod\'s volume name too', async () => {
    const h = await orphan();

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: 'volume-name' }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });

    expect(result).toMatchObject({ kind: 'started', volumeName: DEVICE1 });
    expect(await outcomeOf(h, result)).toMatchObject({ outcome: 'unmounted' });
  });

  it('holds the per-volume lock while the TearDown runs: no other operation with its key can start', async () => {
    // Arrange
    const h = await orphan();
    plugin.hold();

    // Act
    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });
    let refused: unknown = null;
    try {
      h.operationExecutor.unmountVolume(h.asw.getPossiblyMountedVolumesForPod(POD1)[0] ?? expect.fail('no mount'), h.asw, `${h.rootDir}/pods`);
    } catch (err) {
      refused = err;
    }
    plugin.release();

    // Assert
    expect(result.kind).toBe('started');
    expect(isAlreadyExists(refused)).toBe(true);
    expect(await outcomeOf(h, result)).toMatchObject({ outcome: 'unmounted' });
    expect(plugin.counts.tearDown).toBe(1);
  });

  it('reports a failed TearDown with its error verbatim and the mount uncertain', async () => {
    const h = await orphan();
    plugin.failures = 1;

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });
    const outcome = await outcomeOf(h, result);

    expect(outcome.outcome).toBe('uncertain');
    expect(outcome.error).toContain(SCRIPTED_TEARDOWN_ERROR);
    expect(h.vm.getPendingOperations().map((op) => [op.operationName, op.pending, op.failures])).toEqual([['volume_unmount', false, 1]]);
  });

  it.each([
    {
      name: 'a pod source has not listed every pod (states-synced)',
      arrange: (h: Harness) => {
        h.pods.ready = false;
      },
      failed: ['states-synced'],
      message: 'desired and actual states are not synced yet',
    },
    {
      name: 'the pod is in the desired state (pod-not-desired)',
      arrange: (h: Harness) => {
        wantVolumeAgain(h);
      },
      failed: ['pod-not-desired'],
      message: `pod ${POD1} still wants volume volume-name`,
    },
    {
      name: 'an operation runs on the volume for another pod (no-operation-running)',
      arrange: (h: Harness) => {
        h.pendingOperations.run(DEVICE1, uniquePodName('other-pod'), EmptyNodeName, heldOperation('volume_mount'));
      },
      failed: ['no-operation-running'],
      message: `an operation (volume_mount) is running on volume ${DEVICE1}`,
    },
  ])('refuses an orphan and starts nothing while $name', async ({ arrange, failed, message }) => {
    // Arrange
    const h = await orphan();
    arrange(h);
    const source = new ScriptedSource();

    // Act
    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) });

    // Assert
    expect(result).toMatchObject({ kind: 'refused', message });
    expect(failedChecks(result)).toEqual(failed);
    expect(result.checks).toHaveLength(7);
    expect(plugin.counts.tearDown).toBe(0);
  });

  it.each([
    {
      name: 'the live read finds the pod in its source',
      answer: () => Promise.resolve<PodSourceLookup>({ presence: 'present', detail: 'pod default/pod1 (uid pod1uid) exists in the API server', pod: { namespace: 'default', name: 'pod1' } }),
      detail: 'pod default/pod1 (uid pod1uid) exists in the API server',
      message: `pod ${POD1} still exists in its source: pod default/pod1 (uid pod1uid) exists in the API server`,
    },
    {
      name: 'the pod source cannot be read',
      answer: () => Promise.reject(new Error('LIST /api/v1/pods: connection refused')),
      detail: 'the pod source could not be read: LIST /api/v1/pods: connection refused',
      message: `the pod source could not be read for pod ${POD1}: LIST /api/v1/pods: connection refused`,
    },
  ])('refuses an orphan the cache no longer has when $name (pod-absent-from-source)', async ({ answer, detail, message }) => {
    // Arrange: the engine's pod source and desired state no longer have the pod
    const h = await orphan();
    const source = new ScriptedSource();
    source.answer = answer;

    // Act
    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) });

    // Assert
    expect(result).toMatchObject({ kind: 'refused', message });
    expect(result.checks.find((c) => c.name === 'pod-absent-from-source')).toEqual({ name: 'pod-absent-from-source', ok: false, detail });
    expect(failedChecks(result)).toEqual(['pod-absent-from-source']);
    expect(plugin.counts.tearDown).toBe(0);
  });

  it('allows a pod its source still lists as terminated', async () => {
    const h = await orphan();
    const source = new ScriptedSource();
    source.answer = () => Promise.resolve({ presence: 'terminated', detail: 'pod default/pod1 (uid pod1uid) is in phase Succeeded in the API server', pod: { namespace: 'default', name: 'pod1' } });

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) });

    expect(result.kind).toBe('started');
    expect(result.checks.find((c) => c.name === 'pod-absent-from-source')).toEqual({
      name: 'pod-absent-from-source',
      ok: true,
      detail: 'pod default/pod1 (uid pod1uid) is in phase Succeeded in the API server',
    });
    expect(await outcomeOf(h, result)).toMatchObject({ outcome: 'unmounted' });
  });

  it('refuses while the pod source reports an error that may concern the pod (source-no-error)', async () => {
    const h = await orphan();
    const source = new ScriptedSource();
    source.errors = [{ file: '/api/v1/pods?fieldSelector=spec.nodeName=mynodename', message: 'pods on node mynodename: watch failed: 500' }];

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) });

    expect(result).toMatchObject({
      kind: 'refused',
      message: `the pod source reports an error that may concern pod ${POD1}: /api/v1/pods?fieldSelector=spec.nodeName=mynodename: pods on node mynodename: watch failed: 500`,
    });
    expect(failedChecks(result)).toEqual(['source-no-error']);
    expect(plugin.counts.tearDown).toBe(0);
  });

  it('evaluates the checks after the live read: a pod added to the desired state meanwhile is refused', async () => {
    // Arrange: the live read resolves only after the pod came back to the desired state
    const h = await orphan();
    const source = new ScriptedSource();
    let answer: (lookup: PodSourceLookup) => void = () => undefined;
    source.answer = () =>
      new Promise((resolve) => {
        answer = resolve;
      });

    // Act
    const pending = h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) });
    wantVolumeAgain(h);
    answer(ABSENT);
    const result = await pending;

    // Assert
    expect(result.kind).toBe('refused');
    expect(failedChecks(result)).toEqual(['pod-not-desired']);
    expect(plugin.counts.tearDown).toBe(0);
  });

  it('refuses before reconstruction has finished (reconstruction-done)', async () => {
    // Arrange: everything else passes; reconstruction is reported running
    const h = await orphan();
    const vm = h.vm;
    const options: OperatorActionsOptions = {
      dsw: h.dsw,
      asw: h.asw,
      pendingOperations: h.pendingOperations,
      executor: h.operationExecutor,
      clock: h.clock,
      podsDir: `${h.rootDir}/pods`,
      sourcesReady: () => true,
      reconcilerStatesHasBeenSynced: () => true,
      reconstructionReport: () => ({ state: 'running', startedAt: h.clock.now(), finishedAt: null, error: null, entries: [] }),
      clearBackoff: (v, p) => vm.retryNow(v, p),
      onOperationRecord: (listener) => vm.onOperationRecord(listener),
    };

    // Act
    const result = await new OperatorActions(options).forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });

    // Assert
    expect(result).toMatchObject({ kind: 'refused', message: 'reconstruction has not finished (running)' });
    expect(failedChecks(result)).toEqual(['reconstruction-done']);
    expect(plugin.counts.tearDown).toBe(0);
  });

  it('answers no-such-mount when every safety check passes but the pod has no mount of the volume', async () => {
    const h = await orphan();

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: 'fake-plugin/other' }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });

    expect(result).toMatchObject({ kind: 'no-such-mount', message: `pod ${POD1} has no mount of volume fake-plugin/other` });
    expect(failedChecks(result)).toEqual(['volume-mounted']);
  });

  it('refuses with the reason of the failed safety check, not "no such mount", when the mount is missing too', async () => {
    const h = await orphan();
    h.pendingOperations.run(uniqueVolumeName('fake-plugin/other'), EmptyUniquePodName, EmptyNodeName, heldOperation('volume_attach'));

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: 'fake-plugin/other' }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });

    expect(result).toMatchObject({ kind: 'refused', message: 'an operation (volume_attach) is running on volume fake-plugin/other' });
    expect(failedChecks(result)).toEqual(['volume-mounted', 'no-operation-running']);
  });

  it('clears a TearDown backoff through the per-node limiter, and refuses without clearing when the limiter is exhausted', async () => {
    // Arrange: a failed TearDown leaves the key in backoff
    const h = await orphan();
    plugin.failures = 1;
    const first = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source: new ScriptedSource(), limiter: new SlotLimiter(1) });
    await outcomeOf(h, first);
    const exhausted = new SlotLimiter(0);
    const available = new SlotLimiter(1);

    // Act
    const limited = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source: new ScriptedSource(), limiter: exhausted });
    const backoffAfterRefusal = h.vm.getPendingOperations().map((op) => [op.operationName, op.pending, op.failures]);
    const retried = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source: new ScriptedSource(), limiter: available });

    // Assert
    expect(limited).toMatchObject({ kind: 'rate-limited', message: 'too many retries: at most 10 per 10 s on this node; try again in 5 s', retryAfterMs: 4_200 });
    expect(failedChecks(limited)).toEqual(['rate-limit']);
    expect(backoffAfterRefusal).toEqual([['volume_unmount', false, 1]]);
    expect(available.taken).toBe(1);
    expect(retried.checks.find((c) => c.name === 'no-operation-running')?.detail).toBe(
      'no operation is running; the failed volume_unmount in backoff (1 failure(s)) is retried now',
    );
    expect(await outcomeOf(h, retried)).toMatchObject({ outcome: 'unmounted' });
    // The fake counts TearDowns that reached the plugin's own unmounter: the failed one did not.
    expect(plugin.counts.tearDown).toBe(1);
  });

  it('reads the pod source once per request, also when a check refuses', async () => {
    const h = await mounted();
    const source = new ScriptedSource();

    const result = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) });

    expect(result.kind).toBe('refused');
    expect(source.lookups).toBe(1);
  });
});

describe('operator actions in plan-only mode', () => {
  it('are refused: the mounts and operations are the kubelet\'s', async () => {
    plugin = new ScriptedTearDownPlugin();
    const h = new Harness({ fakePlugin: plugin, planOnly: true });
    harness = h;
    const source = new ScriptedSource();

    const unmount = await h.vm.forceUnmount({ podUid: POD1, volume: DEVICE1 }, { source, limiter: new SlotLimiter(1) }).then(() => null, (err: unknown) => err);
    let retry: unknown = null;
    try {
      h.vm.retryOperation({ volume: DEVICE1, podUid: null }, new SlotLimiter(1));
    } catch (err) {
      retry = err;
    }

    expect(isPlanOnlyModeError(unmount)).toBe(true);
    expect(isPlanOnlyModeError(retry)).toBe(true);
    expect(source.lookups).toBe(0);
  });
});

describe('OperatorActions.retryOperation', () => {
  const FAILING = uniqueVolumeName('fake-plugin/pd-fail');

  /** A pod whose mount keeps failing in SetUp: a volume_mount entry in backoff for (pd-fail, "", ""). */
  async function inBackoff(): Promise<Harness> {
    plugin = new ScriptedTearDownPlugin();
    const h = new Harness({ fakePlugin: plugin });
    harness = h;
    h.pods.add(makePod([gcePdVolume(FailOnSetupVolumeName, 'pd-fail')]));
    h.start();
    await h.until(() => h.vm.getPendingOperations().some((op) => op.key.volumeName === FAILING && !op.pending && op.failures > 0));
    await h.vm.stop();
    return h;
  }

  it('clears the entry the table matches and names it', async () => {
    const h = await inBackoff();
    const limiter = new SlotLimiter(1);

    const result = h.vm.retryOperation({ volume: FAILING, podUid: 'pod1uid' }, limiter);

    expect(result).toMatchObject({ kind: 'cleared', operation: { operationName: 'volume_mount', key: { volumeName: FAILING, podName: EmptyUniquePodName, nodeName: EmptyNodeName } } });
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['rate-limit', true],
      ['operation-exists', true],
      ['operation-not-running', true],
    ]);
    expect(h.vm.getPendingOperations()).toEqual([]);
    expect(limiter.taken).toBe(1);
  });

  it('refuses a running entry and leaves it alone', async () => {
    const h = await inBackoff();
    h.pendingOperations.run(DEVICE1, EmptyUniquePodName, EmptyNodeName, heldOperation('volume_attach'));

    const result = h.vm.retryOperation({ volume: DEVICE1, podUid: null }, new SlotLimiter(1));

    expect(result).toMatchObject({ kind: 'running', operation: { operationName: 'volume_attach', pending: true } });
    expect(h.operationExecutor.isOperationPending(DEVICE1, EmptyUniquePodName, EmptyNodeName)).toBe(true);
  });

  it('takes a limiter slot before anything else and refuses without one', async () => {
    const h = await inBackoff();

    const result = h.vm.retryOperation({ volume: FAILING, podUid: null }, new SlotLimiter(0));

    expect(result).toMatchObject({ kind: 'rate-limited', retryAfterMs: 4_200 });
    expect(h.vm.getPendingOperations().map((op) => op.operationName)).toEqual(['volume_mount']);
  });

  it('answers not-found for a key with no entry', async () => {
    const h = await inBackoff();

    const result = h.vm.retryOperation({ volume: 'fake-plugin/none', podUid: null }, new SlotLimiter(1));

    expect(result).toMatchObject({ kind: 'not-found', message: 'no operation for volume fake-plugin/none in the pending-operations table' });
  });
});
