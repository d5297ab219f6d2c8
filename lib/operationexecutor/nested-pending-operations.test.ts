import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../clock/fake-clock.ts';
import {
  EmptyNodeName,
  EmptyUniquePodName,
  EmptyUniqueVolumeName,
  nodeName,
  uniquePodName,
  uniqueVolumeName,
  type NodeName,
  type UniquePodName,
  type UniqueVolumeName,
} from '../volume/types.ts';
import { isExponentialBackoff } from './exponential-backoff.ts';
import {
  AlreadyExistsError,
  NestedPendingOperations,
  formatOperationKey,
  isAlreadyExists,
  type GeneratedOperations,
  type OperationResult,
} from './nested-pending-operations.ts';

const vol1 = uniqueVolumeName('kubernetes.io/csi/d^h');
const vol2 = uniqueVolumeName('kubernetes.io/csi/d^other');
const pod1 = uniquePodName('pod-1');
const pod2 = uniquePodName('pod-2');
const pod3 = uniquePodName('pod-3');
const node1 = nodeName('node-1');
const node2 = nodeName('node-2');
const noVol = EmptyUniqueVolumeName;
const noPod = EmptyUniquePodName;
const noNode = EmptyNodeName;

interface Key {
  v: UniqueVolumeName;
  p: UniquePodName;
  n: NodeName;
}

/** An operation that runs until `finish` is called. */
function blockingOp(operationName = 'volume_mount') {
  let finish: (result?: OperationResult) => void = () => undefined;
  const started = vi.fn();
  const promise = new Promise<OperationResult>((resolve) => {
    finish = (result = {}) => {
      resolve(result);
    };
  });
  const ops: GeneratedOperations = {
    operationName,
    operationFunc: () => {
      started();
      return promise;
    },
  };
  return {
    ops,
    started,
    finish: (result?: OperationResult) => {
      finish(result);
    },
  };
}

function failingOp(operationName = 'volume_mount', message = 'mount failed'): GeneratedOperations {
  return {
    operationName,
    operationFunc: () => Promise.resolve({ eventErr: new Error(`short: ${message}`), detailedErr: new Error(message) }),
  };
}

function succeedingOp(operationName = 'volume_mount'): GeneratedOperations {
  return { operationName, operationFunc: () => Promise.resolve({}) };
}

function setup(opts: { exponentialBackOffOnError?: boolean } = {}) {
  const clock = new FakeClock();
  const logged: string[] = [];
  const onChange = vi.fn();
  const npo = new NestedPendingOperations({
    clock,
    exponentialBackOffOnError: opts.exponentialBackOffOnError ?? true,
    logger: { error: (msg) => logged.push(msg) },
    onChange,
  });
  return { clock, npo, logged, onChange };
}

function captureError(fn: () => void): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('formatOperationKey', () => {
  it.each([
    { key: { volumeName: vol1, podName: noPod, nodeName: noNode }, want: '{volumeName:kubernetes.io/csi/d^h podName: nodeName:}' },
    { key: { volumeName: vol1, podName: pod1, nodeName: node1 }, want: '{volumeName:kubernetes.io/csi/d^h podName:pod-1 nodeName:node-1}' },
    { key: { volumeName: noVol, podName: noPod, nodeName: noNode }, want: '{volumeName: podName: nodeName:}' },
  ])('prints $want like Go %+v', ({ key, want }) => {
    expect(formatOperationKey(key)).toBe(want);
  });
});

describe('NestedPendingOperations key matching', () => {
  it.each<{ name: string; running: Key; next: Key; conflicts: boolean }>([
    { name: 'identical keys conflict', running: { v: vol1, p: pod1, n: node1 }, next: { v: vol1, p: pod1, n: node1 }, conflicts: true },
    { name: 'identical volume-only keys conflict', running: { v: vol1, p: noPod, n: noNode }, next: { v: vol1, p: noPod, n: noNode }, conflicts: true },
    { name: 'different volumes do not conflict', running: { v: vol1, p: noPod, n: noNode }, next: { v: vol2, p: noPod, n: noNode }, conflicts: false },
    { name: 'different pods of one volume do not conflict', running: { v: vol1, p: pod1, n: noNode }, next: { v: vol1, p: pod2, n: noNode }, conflicts: false },
    { name: 'a running empty pod conflicts with any pod', running: { v: vol1, p: noPod, n: noNode }, next: { v: vol1, p: pod2, n: noNode }, conflicts: true },
    { name: 'a new empty pod conflicts with a running pod', running: { v: vol1, p: pod1, n: noNode }, next: { v: vol1, p: noPod, n: noNode }, conflicts: true },
    { name: 'different nodes of one volume do not conflict', running: { v: vol1, p: noPod, n: node1 }, next: { v: vol1, p: noPod, n: node2 }, conflicts: false },
    { name: 'a running empty node conflicts with any node', running: { v: vol1, p: noPod, n: noNode }, next: { v: vol1, p: noPod, n: node2 }, conflicts: true },
    { name: 'a new empty node conflicts with a running node', running: { v: vol1, p: noPod, n: node1 }, next: { v: vol1, p: noPod, n: noNode }, conflicts: true },
    { name: 'same pod on different nodes does not conflict', running: { v: vol1, p: pod1, n: node1 }, next: { v: vol1, p: pod1, n: node2 }, conflicts: false },
    { name: 'different pods on the same node do not conflict', running: { v: vol1, p: pod1, n: node1 }, next: { v: vol1, p: pod2, n: node1 }, conflicts: false },
    { name: 'wildcard pod and node conflict with a fully keyed run', running: { v: vol1, p: pod1, n: node1 }, next: { v: vol1, p: noPod, n: noNode }, conflicts: true },
    { name: 'an empty volume never conflicts with an empty volume', running: { v: noVol, p: noPod, n: noNode }, next: { v: noVol, p: noPod, n: noNode }, conflicts: false },
    { name: 'an empty volume never conflicts with a named volume', running: { v: vol1, p: noPod, n: noNode }, next: { v: noVol, p: noPod, n: noNode }, conflicts: false },
    { name: 'a named volume never conflicts with a running empty volume', running: { v: noVol, p: noPod, n: noNode }, next: { v: vol1, p: noPod, n: noNode }, conflicts: false },
  ])('$name', async ({ running, next, conflicts }) => {
    // Arrange
    const { clock, npo } = setup();
    const first = blockingOp();
    const second = blockingOp();
    npo.run(running.v, running.p, running.n, first.ops);
    await clock.flush();
    // Act
    const pending = npo.isOperationPending(next.v, next.p, next.n);
    const safe = npo.isOperationSafeToRetry(next.v, next.p, next.n, 'volume_mount');
    const err = captureError(() => {
      npo.run(next.v, next.p, next.n, second.ops);
    });
    await clock.flush();
    // Assert
    expect(pending).toBe(conflicts);
    expect(safe).toBe(!conflicts);
    expect(isAlreadyExists(err)).toBe(conflicts);
    expect(second.started).toHaveBeenCalledTimes(conflicts ? 0 : 1);
    first.finish();
    second.finish();
    await npo.wait();
    expect(npo.size()).toBe(0);
  });

  it('refuses a mount of another pod while a mount keyed with an empty pod runs', async () => {
    // Arrange
    const { clock, npo } = setup();
    const running = blockingOp('volume_mount');
    npo.run(vol1, noPod, noNode, running.ops);
    await clock.flush();
    // Act
    const err = captureError(() => {
      npo.run(vol1, pod2, noNode, succeedingOp('volume_mount'));
    });
    // Assert
    expect(err).toBeInstanceOf(AlreadyExistsError);
    expect((err as Error).message).toBe(
      'Failed to create operation with name {volumeName:kubernetes.io/csi/d^h podName:pod-2 nodeName:}. ' +
        'An operation with that name is already executing.',
    );
    running.finish();
    await npo.wait();
  });

  it('runs unmounts of two different pods of one volume in parallel', async () => {
    // Arrange
    const { clock, npo } = setup();
    const a = blockingOp('volume_unmount');
    const b = blockingOp('volume_unmount');
    // Act
    npo.run(vol1, pod1, noNode, a.ops);
    npo.run(vol1, pod2, noNode, b.ops);
    await clock.flush();
    // Assert
    expect(a.started).toHaveBeenCalledTimes(1);
    expect(b.started).toHaveBeenCalledTimes(1);
    expect(npo.isOperationPending(vol1, pod1, noNode)).toBe(true);
    expect(npo.isOperationPending(vol1, pod2, noNode)).toBe(true);
    expect(npo.isOperationPending(vol1, pod3, noNode)).toBe(false);
    expect(npo.isOperationPending(vol1, noPod, noNode)).toBe(true);
    a.finish();
    b.finish();
    await npo.wait();
  });

  it('runs operations with an empty volume name concurrently, even with identical keys', async () => {
    const { clock, npo } = setup();
    const a = blockingOp('verify_volumes_are_attached_per_node');
    const b = blockingOp('verify_volumes_are_attached_per_node');
    npo.run(noVol, noPod, noNode, a.ops);
    npo.run(noVol, noPod, noNode, b.ops);
    await clock.flush();
    expect(a.started).toHaveBeenCalledTimes(1);
    expect(b.started).toHaveBeenCalledTimes(1);
    expect(npo.isOperationPending(noVol, noPod, noNode)).toBe(false);
    a.finish({ detailedErr: new Error('verify failed') });
    b.finish();
    await npo.wait();
    // An entry with an empty volume name can never be matched, so it is not kept in backoff.
    expect(npo.size()).toBe(0);
  });

  it('prefers a pending match over an earlier non-pending one', async () => {
    // Arrange: a failed (expired) unmount of pod-1, then a running unmount of pod-2.
    const { clock, npo } = setup();
    npo.run(vol1, pod1, noNode, failingOp('volume_unmount'));
    await clock.advance(501);
    const running = blockingOp('volume_unmount');
    npo.run(vol1, pod2, noNode, running.ops);
    await clock.flush();
    // Act
    const err = captureError(() => {
      npo.run(vol1, noPod, noNode, succeedingOp('unmount_device'));
    });
    // Assert
    expect(isAlreadyExists(err)).toBe(true);
    running.finish();
    await npo.wait();
  });

  it.each([
    { name: 'an exact non-pending match wins over an earlier wildcard match', pod: pod2, refused: false },
    { name: 'without an exact match the first match decides', pod: pod3, refused: true },
  ])('$name', async ({ pod, refused }) => {
    // Arrange: entries [(vol1, "") in backoff, (vol1, pod-2) with an expired backoff].
    const { clock, npo } = setup();
    npo.run(vol1, pod1, noNode, failingOp('volume_unmount'));
    npo.run(vol1, pod2, noNode, failingOp('volume_unmount'));
    await clock.advance(501);
    npo.run(vol1, noPod, noNode, failingOp('volume_unmount'));
    await clock.flush();
    expect(npo.list().map((v) => v.key.podName)).toEqual([noPod, pod2]);
    // Act
    const safe = npo.isOperationSafeToRetry(vol1, pod, noNode, 'volume_unmount');
    const err = captureError(() => {
      npo.run(vol1, pod, noNode, succeedingOp('volume_unmount'));
    });
    await clock.flush();
    // Assert
    expect(safe).toBe(!refused);
    expect(isExponentialBackoff(err)).toBe(refused);
  });
});

describe('NestedPendingOperations exponential backoff', () => {
  it.each([
    { failures: 1, backoff: 500 },
    { failures: 2, backoff: 1_000 },
    { failures: 3, backoff: 2_000 },
    { failures: 4, backoff: 4_000 },
  ])('after $failures consecutive failures a retry is refused for $backoff ms', async ({ failures, backoff }) => {
    // Arrange
    const { clock, npo } = setup();
    for (let i = 1; i < failures; i++) {
      npo.run(vol1, noPod, noNode, failingOp());
      await clock.flush();
      await clock.advance((npo.list()[0]?.durationBeforeRetry ?? 0) + 1);
    }
    npo.run(vol1, noPod, noNode, failingOp());
    await clock.flush();
    const failedAt = clock.now();
    // Act: exactly at the end of the window, then one millisecond later.
    await clock.advance(backoff);
    const refusedAtEdge = captureError(() => {
      npo.run(vol1, noPod, noNode, succeedingOp());
    });
    const safeAtEdge = npo.isOperationSafeToRetry(vol1, noPod, noNode, 'volume_mount');
    await clock.advance(1);
    const safeAfter = npo.isOperationSafeToRetry(vol1, noPod, noNode, 'volume_mount');
    const allowed = captureError(() => {
      npo.run(vol1, noPod, noNode, succeedingOp());
    });
    await npo.wait();
    // Assert
    expect(isExponentialBackoff(refusedAtEdge)).toBe(true);
    expect(refusedAtEdge).toMatchObject({ durationBeforeRetry: backoff, lastErrorTime: failedAt });
    expect(safeAtEdge).toBe(false);
    expect(safeAfter).toBe(true);
    expect(allowed).toBeUndefined();
    expect(npo.size()).toBe(0);
  });

  it('a success deletes the entry, so the next failure backs off 500 ms again', async () => {
    // Arrange: three failures (2 s backoff), then a success.
    const { clock, npo } = setup();
    for (let i = 0; i < 3; i++) {
      npo.run(vol1, noPod, noNode, failingOp());
      await clock.flush();
      await clock.advance((npo.list()[0]?.durationBeforeRetry ?? 0) + 1);
    }
    npo.run(vol1, noPod, noNode, succeedingOp());
    await npo.wait();
    expect(npo.size()).toBe(0);
    // Act
    npo.run(vol1, noPod, noNode, failingOp());
    await clock.flush();
    // Assert
    expect(npo.list()).toMatchObject([{ durationBeforeRetry: 500, failures: 1 }]);
  });

  it('a different operation name during backoff is allowed and resets the backoff', async () => {
    // Arrange: two mount failures, so a 1 s backoff.
    const { clock, npo, logged } = setup();
    npo.run(vol1, noPod, noNode, failingOp('volume_mount'));
    await clock.advance(501);
    npo.run(vol1, noPod, noNode, failingOp('volume_mount'));
    await clock.advance(100);
    expect(npo.isOperationSafeToRetry(vol1, noPod, noNode, 'volume_mount')).toBe(false);
    expect(npo.isOperationSafeToRetry(vol1, noPod, noNode, 'unmount_device')).toBe(true);
    // Act
    npo.run(vol1, noPod, noNode, failingOp('unmount_device', 'unmount failed'));
    await clock.flush();
    // Assert
    expect(npo.list()).toMatchObject([
      { operationName: 'unmount_device', durationBeforeRetry: 500, failures: 1, lastError: 'unmount failed' },
    ]);
    expect(logged.at(-1)).toContain('(durationBeforeRetry 500ms)');
  });

  it('an expired backoff is kept when a different operation name runs, so its failure doubles it', async () => {
    const { clock, npo } = setup();
    npo.run(vol1, noPod, noNode, failingOp('volume_mount'));
    await clock.advance(501);
    npo.run(vol1, noPod, noNode, failingOp('unmount_device'));
    await clock.flush();
    expect(npo.list()).toMatchObject([{ operationName: 'volume_mount', durationBeforeRetry: 1_000, failures: 2 }]);
  });

  it('caps the backoff at 2m2s after enough failures', async () => {
    // Arrange
    const { clock, npo } = setup();
    const seen: number[] = [];
    // Act
    for (let i = 0; i < 10; i++) {
      npo.run(vol1, noPod, noNode, failingOp());
      await clock.flush();
      const view = npo.list()[0];
      seen.push(view?.durationBeforeRetry ?? -1);
      await clock.advance((view?.durationBeforeRetry ?? 0) + 1);
    }
    // Assert
    expect(seen).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 122_000, 122_000]);
  });

  it('deletes failed entries when exponential backoff on error is disabled', async () => {
    // Arrange
    const { clock, npo, logged } = setup({ exponentialBackOffOnError: false });
    // Act
    npo.run(vol1, noPod, noNode, failingOp());
    await clock.flush();
    // Assert
    expect(npo.size()).toBe(0);
    expect(npo.isOperationSafeToRetry(vol1, noPod, noNode, 'volume_mount')).toBe(true);
    expect(logged).toEqual(['operation {volumeName:kubernetes.io/csi/d^h podName: nodeName:} failed with: mount failed']);
  });
});

describe('NestedPendingOperations messages', () => {
  it('logs the no-retries-permitted line and refuses with the Go backoff message', async () => {
    // Arrange: the fake clock starts at 2024-01-01 12:00:00 UTC.
    const { clock, npo, logged } = setup();
    npo.run(vol1, noPod, noNode, failingOp('volume_mount', 'mount failed: "boom"'));
    await clock.flush();
    await clock.advance(250);
    // Act
    const err = captureError(() => {
      npo.run(vol1, pod1, noNode, succeedingOp('volume_mount'));
    });
    // Assert
    expect(logged).toEqual([
      'Operation for "{volumeName:kubernetes.io/csi/d^h podName: nodeName:}" failed. ' +
        'No retries permitted until 2024-01-01 12:00:00.5 +0000 UTC (durationBeforeRetry 500ms). ' +
        'Error: mount failed: "boom"',
    ]);
    expect(isExponentialBackoff(err)).toBe(true);
    expect((err as Error).message).toBe(
      'Failed to create operation with name "{volumeName:kubernetes.io/csi/d^h podName:pod-1 nodeName:}". ' +
        'An operation with that name failed at 2024-01-01 12:00:00 +0000 UTC. ' +
        'No retries permitted until 2024-01-01 12:00:00.5 +0000 UTC (500ms). ' +
        'Last error: "mount failed: \\"boom\\"".',
    );
  });
});

describe('NestedPendingOperations list', () => {
  it('shows a running entry as pending, without backoff', async () => {
    // Arrange
    const { clock, npo } = setup();
    const running = blockingOp('volume_mount');
    const startedAt = clock.now();
    // Act
    npo.run(vol1, pod1, node1, running.ops);
    await clock.advance(40);
    // Assert
    expect(npo.list()).toEqual([
      {
        key: { volumeName: vol1, podName: pod1, nodeName: node1 },
        operationName: 'volume_mount',
        pending: true,
        failures: 0,
        startedAt,
        lastError: null,
        lastErrorTime: null,
        durationBeforeRetry: 0,
        retryAt: null,
      },
    ]);
    running.finish();
    await npo.wait();
  });

  it('shows a failed entry in backoff with its retry time', async () => {
    // Arrange
    const { clock, npo } = setup();
    const running = blockingOp('volume_mount');
    npo.run(vol1, noPod, noNode, running.ops);
    await clock.advance(40);
    const failedAt = clock.now();
    // Act
    running.finish({ detailedErr: new Error('mount failed') });
    await npo.wait();
    // Assert
    expect(npo.list()).toEqual([
      {
        key: { volumeName: vol1, podName: noPod, nodeName: noNode },
        operationName: 'volume_mount',
        pending: false,
        failures: 1,
        startedAt: null,
        lastError: 'mount failed',
        lastErrorTime: failedAt,
        durationBeforeRetry: 500,
        retryAt: failedAt + 500,
      },
    ]);
  });

  it('returns copies that do not change the table', async () => {
    const { clock, npo } = setup();
    npo.run(vol1, pod1, noNode, failingOp());
    await clock.flush();
    const [view] = npo.list();
    if (view === undefined) throw new Error('expected one entry');
    view.key.podName = pod2;
    view.pending = true;
    expect(npo.list()[0]).toMatchObject({ key: { podName: pod1 }, pending: false });
  });

  it('rekeys a reused entry to the key of the new run', async () => {
    const { clock, npo } = setup();
    npo.run(vol1, pod1, noNode, failingOp('volume_unmount'));
    await clock.advance(501);
    const running = blockingOp('unmount_device');
    npo.run(vol1, noPod, noNode, running.ops);
    await clock.flush();
    expect(npo.list()).toMatchObject([{ key: { podName: noPod }, operationName: 'volume_unmount', pending: true, failures: 1 }]);
    running.finish();
    await npo.wait();
    expect(npo.size()).toBe(0);
  });

  it('deletes like upstream: the last entry takes the place of a deleted one', async () => {
    const { clock, npo } = setup();
    const a = blockingOp();
    npo.run(vol1, pod1, noNode, a.ops);
    npo.run(vol1, pod2, noNode, failingOp());
    npo.run(vol1, pod3, noNode, failingOp());
    await clock.flush();
    a.finish();
    await npo.wait();
    expect(npo.list().map((v) => v.key.podName)).toEqual([pod3, pod2]);
  });
});

describe('NestedPendingOperations clearBackoff', () => {
  it.each([
    { name: 'nothing matches', state: 'empty', key: { v: vol1, p: noPod, n: noNode }, want: 'not-found' },
    { name: 'the volume name is empty', state: 'empty-volume', key: { v: noVol, p: noPod, n: noNode }, want: 'not-found' },
    { name: 'the matching operation is running', state: 'running', key: { v: vol1, p: pod1, n: noNode }, want: 'running' },
    { name: 'the matching operation is in backoff', state: 'backoff', key: { v: vol1, p: pod1, n: noNode }, want: 'cleared' },
    { name: 'a wildcard key matches an entry in backoff', state: 'backoff', key: { v: vol1, p: noPod, n: noNode }, want: 'cleared' },
  ] as const)('reports $want when $name', async ({ state, key, want }) => {
    // Arrange
    const { clock, npo, onChange } = setup();
    const running = blockingOp();
    if (state === 'running') npo.run(vol1, noPod, noNode, running.ops);
    if (state === 'backoff') npo.run(vol1, pod1, noNode, failingOp());
    if (state === 'empty-volume') npo.run(noVol, noPod, noNode, running.ops);
    await clock.flush();
    const changesBefore = onChange.mock.calls.length;
    // Act
    const result = npo.clearBackoff(key.v, key.p, key.n);
    // Assert
    expect(result).toBe(want);
    expect(onChange.mock.calls.length - changesBefore).toBe(want === 'cleared' ? 1 : 0);
    if (want === 'cleared') {
      expect(npo.size()).toBe(0);
      expect(npo.isOperationSafeToRetry(vol1, pod1, noNode, 'volume_mount')).toBe(true);
    }
    running.finish();
    await npo.wait();
  });

  it('lets the next attempt start at once and a new failure back off 500 ms', async () => {
    // Arrange: three failures, so a 2 s backoff.
    const { clock, npo } = setup();
    for (let i = 0; i < 3; i++) {
      npo.run(vol1, noPod, noNode, failingOp());
      await clock.flush();
      if (i < 2) await clock.advance((npo.list()[0]?.durationBeforeRetry ?? 0) + 1);
    }
    expect(npo.list()[0]?.durationBeforeRetry).toBe(2_000);
    // Act
    expect(npo.clearBackoff(vol1, noPod, noNode)).toBe('cleared');
    npo.run(vol1, noPod, noNode, failingOp());
    await clock.flush();
    // Assert
    expect(npo.list()).toMatchObject([{ durationBeforeRetry: 500, failures: 1 }]);
  });
});

describe('NestedPendingOperations getOperation', () => {
  /** Entries made in order: `fail` leaves one in backoff, `block` keeps one running. */
  type Entry = { p: UniquePodName; kind: 'fail' | 'block' };
  it.each([
    { name: 'nothing for another volume', entries: [{ p: noPod, kind: 'fail' }], v: vol2, p: noPod, want: null },
    { name: 'a volume-level entry for a key without a pod', entries: [{ p: noPod, kind: 'fail' }], v: vol1, p: noPod, want: 0 },
    { name: 'a volume-level entry for a key with a pod (an empty pod is a wildcard)', entries: [{ p: noPod, kind: 'fail' }], v: vol1, p: pod1, want: 0 },
    { name: 'a pod entry for a key without a pod (wildcard)', entries: [{ p: pod1, kind: 'fail' }], v: vol1, p: noPod, want: 0 },
    { name: 'nothing for another pod', entries: [{ p: pod2, kind: 'fail' }], v: vol1, p: pod1, want: null },
    { name: 'the running entry over an earlier one in backoff', entries: [{ p: pod2, kind: 'fail' }, { p: pod1, kind: 'block' }], v: vol1, p: noPod, want: 1 },
    { name: 'the exact pod entry over an earlier one of another pod', entries: [{ p: pod2, kind: 'fail' }, { p: pod1, kind: 'fail' }], v: vol1, p: pod1, want: 1 },
    { name: 'the first match when none is exact', entries: [{ p: pod1, kind: 'fail' }, { p: pod2, kind: 'fail' }], v: vol1, p: noPod, want: 0 },
  ] satisfies { name: string; entries: Entry[]; v: UniqueVolumeName; p: UniquePodName; want: number | null }[])(
    'finds $name, the entry clearBackoff acts on',
    async ({ entries, v, p, want }) => {
      // Arrange
      const { clock, npo } = setup();
      const blocking = blockingOp();
      for (const e of entries) {
        npo.run(vol1, e.p, noNode, e.kind === 'fail' ? failingOp() : blocking.ops);
        await clock.flush();
      }
      // Act
      const found = npo.getOperation(v, p, noNode);
      // Assert
      expect(found?.key ?? null).toEqual(want === null ? null : { volumeName: vol1, podName: entries[want]?.p, nodeName: noNode });
      expect(found === undefined ? 'not-found' : found.pending ? 'running' : 'cleared').toBe(npo.clearBackoff(v, p, noNode));
      blocking.finish();
      await npo.wait();
    },
  );
});

describe('NestedPendingOperations execution', () => {
  it('never calls operationFunc synchronously inside run', async () => {
    // Arrange
    const { clock, npo } = setup();
    const operationFunc = vi.fn(() => Promise.resolve({}));
    // Act
    npo.run(vol1, noPod, noNode, { operationName: 'volume_mount', operationFunc });
    // Assert
    expect(operationFunc).not.toHaveBeenCalled();
    expect(npo.isOperationPending(vol1, noPod, noNode)).toBe(true);
    await clock.flush();
    expect(operationFunc).toHaveBeenCalledTimes(1);
    expect(npo.size()).toBe(0);
  });

  it.each([
    {
      name: 'a synchronous throw',
      operationFunc: (): Promise<OperationResult> => {
        throw new Error('kaboom');
      },
      want: 'kaboom',
    },
    { name: 'a rejected promise', operationFunc: () => Promise.reject(new Error('kaboom')), want: 'kaboom' },
    {
      name: 'a thrown non-error',
      operationFunc: (): Promise<OperationResult> => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the case under test
        throw 'kaboom';
      },
      want: 'recovered from panic "kaboom"',
    },
  ])('handles $name from operationFunc as a detailed error', async ({ operationFunc, want }) => {
    // Arrange
    const { clock, npo } = setup();
    const eventRecorderFunc = vi.fn();
    const completeFunc = vi.fn();
    // Act
    npo.run(vol1, noPod, noNode, { operationName: 'volume_mount', operationFunc, eventRecorderFunc, completeFunc });
    await npo.wait();
    await clock.flush();
    // Assert
    expect(npo.list()).toMatchObject([{ pending: false, failures: 1, lastError: want, durationBeforeRetry: 500 }]);
    expect(eventRecorderFunc).toHaveBeenCalledWith(undefined);
    expect(completeFunc).toHaveBeenCalledWith(expect.objectContaining({ message: want }));
  });

  it.each([
    { name: 'a success', result: {}, event: undefined, detailed: undefined },
    {
      name: 'a failure',
      result: { eventErr: new Error('short'), detailedErr: new Error('detailed') },
      event: 'short',
      detailed: 'detailed',
    },
  ])('calls eventRecorderFunc then completeFunc after $name', async ({ result, event, detailed }) => {
    // Arrange
    const { npo } = setup();
    const calls: string[] = [];
    // Act
    npo.run(vol1, noPod, noNode, {
      operationName: 'volume_mount',
      operationFunc: () => Promise.resolve(result),
      eventRecorderFunc: (err) => calls.push(`event:${err?.message ?? 'none'}`),
      completeFunc: (err) => calls.push(`complete:${err?.message ?? 'none'}`),
    });
    await npo.wait();
    // Assert
    expect(calls).toEqual([`event:${event ?? 'none'}`, `complete:${detailed ?? 'none'}`]);
  });

  it('completes the entry even when a hook throws', async () => {
    const { npo, logged } = setup();
    npo.run(vol1, noPod, noNode, {
      ...succeedingOp(),
      eventRecorderFunc: () => {
        throw new Error('recorder broke');
      },
    });
    await npo.wait();
    expect(npo.size()).toBe(0);
    expect(logged).toEqual([
      'eventRecorderFunc of operation {volumeName:kubernetes.io/csi/d^h podName: nodeName:} failed: recorder broke',
    ]);
  });

  it('wait resolves at once when nothing is pending and otherwise when the last operation finishes', async () => {
    // Arrange
    const { clock, npo } = setup();
    await npo.wait();
    const a = blockingOp();
    const b = blockingOp();
    npo.run(vol1, pod1, noNode, a.ops);
    npo.run(vol1, pod2, noNode, b.ops);
    let done = false;
    void npo.wait().then(() => {
      done = true;
    });
    // Act / Assert
    await clock.flush();
    expect(done).toBe(false);
    a.finish({ detailedErr: new Error('failed') });
    await clock.flush();
    expect(done).toBe(false);
    b.finish();
    await clock.flush();
    expect(done).toBe(true);
    // The failed entry stays in backoff; wait does not wait for it.
    expect(npo.size()).toBe(1);
  });

  it('calls onChange when an entry is added, started, completed or cleared', async () => {
    // Arrange
    const { clock, npo, onChange } = setup();
    // Act / Assert
    npo.run(vol1, noPod, noNode, failingOp());
    expect(onChange).toHaveBeenCalledTimes(1);
    await clock.flush();
    expect(onChange).toHaveBeenCalledTimes(2);
    await clock.advance(501);
    npo.run(vol1, noPod, noNode, failingOp());
    expect(onChange).toHaveBeenCalledTimes(3);
    await clock.flush();
    expect(onChange).toHaveBeenCalledTimes(4);
    npo.clearBackoff(vol1, noPod, noNode);
    expect(onChange).toHaveBeenCalledTimes(5);
    // A refused run changes nothing.
    npo.run(vol1, noPod, noNode, blockingOp().ops);
    expect(() => {
      npo.run(vol1, noPod, noNode, succeedingOp());
    }).toThrow(AlreadyExistsError);
    expect(onChange).toHaveBeenCalledTimes(6);
  });
});
