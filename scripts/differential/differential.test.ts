/**
 * The differential runner's own parts: trace validity, the comparison, and the engine side on a
 * known trace (the Go side runs in `npm run test:differential`).
 */
import { describe, expect, it } from 'vitest';
import { compareRuns, firstDifference } from './compare.ts';
import { Outcomes, playOnEngine } from './engine-side.ts';
import { generateTraces, validSteps } from './generate.ts';
import type { ObservedState, OperationState, Step } from './trace.ts';

const vol = (name: string, disk: string): { name: string; disk: string } => ({ name, disk });

describe('validSteps', () => {
  it('drops a second add of a present pod, the remove of an absent one, and a disk held by another pod', () => {
    const steps: Step[] = [
      { op: 'removePod', pod: 'p1' },
      { op: 'addPod', pod: 'p1', volumes: [vol('vol', 'd1')] },
      { op: 'addPod', pod: 'p1', volumes: [vol('vol', 'd2')] },
      { op: 'addPod', pod: 'p2', volumes: [vol('vol', 'd1')] },
      { op: 'restart', removed: ['p1', 'p3'] },
      { op: 'addPod', pod: 'p2', volumes: [vol('vol', 'd1')] },
    ];
    expect(validSteps(steps)).toEqual([
      { op: 'addPod', pod: 'p1', volumes: [vol('vol', 'd1')] },
      { op: 'restart', removed: ['p1'] },
      { op: 'addPod', pod: 'p2', volumes: [vol('vol', 'd1')] },
    ]);
  });

  it('generates the same traces for the same seed, all valid', () => {
    const a = generateTraces(50, 42);
    expect(generateTraces(50, 42)).toEqual(a);
    for (const t of a) expect(validSteps(t.steps)).toEqual(t.steps);
  });
});

describe('comparison', () => {
  const state = (setUp: number): ObservedState => ({
    step: 0,
    volumes: [],
    desired: [],
    operations: [],
    counts: { attach: 0, waitForAttach: 0, mountDevice: 0, setUp, tearDown: 0, unmountDevice: 0, detach: 0 },
  });

  it('names the first differing path', () => {
    expect(firstDifference(state(1), state(1))).toBeNull();
    expect(firstDifference(state(1), state(2))).toBe('$.counts.setUp: oracle 1 ≠ engine 2');
  });

  it('reports the first differing step and a missing one', () => {
    expect(compareRuns([state(1), state(1)], [state(1), state(2)], new Map())?.step).toBe(1);
    expect(compareRuns([state(1), state(1)], [state(1)], new Map())?.difference).toBe('step 1 missing on the engine side');
    expect(compareRuns([state(1)], [state(1)], new Map())).toBeNull();
  });

  it('lets verify-operation-entry hide only the attach verification entry and counts the step', () => {
    const op = (volume: string, name: string, pending: boolean, lastError: string): OperationState => ({
      volume,
      pod: '',
      name,
      pending,
      durationBeforeRetry: lastError === '' ? '0s' : '500ms',
      lastError,
    });
    const mount = op('fake-plugin-d1/d1', 'volume_mount', false, 'x');
    const oracle = { ...state(1), operations: [op('', 'verify_volumes_are_attached_per_node', true, ''), mount] };
    const engine = { ...state(1), operations: [mount, op('verify_volumes_are_attached/mynodename', 'verify_volumes_are_attached_per_node', true, 'failed')] };
    const skipped = new Map<string, number>();
    expect(compareRuns([oracle, state(1)], [engine, { ...state(1), operations: [op('verify_volumes_are_attached/mynodename', 'verify_volumes_are_attached_per_node', false, 'failed')] }], skipped)).toBeNull();
    expect(skipped.get('verify-operation-entry')).toBe(2);
    expect(compareRuns([oracle], [{ ...engine, operations: [op('fake-plugin-d1/d1', 'volume_mount', false, 'y'), engine.operations[1] as OperationState] }], new Map())?.step).toBe(0);
  });
});

describe('engine side', () => {
  it('retries a failing SetUp after its backoff windows and tears down after the pod leaves', async () => {
    const states = await playOnEngine({
      steps: [
        { op: 'addPod', pod: 'p1', volumes: [vol('fail-setup-volume', 'd1')] },
        { op: 'advance', ms: 700 },
        { op: 'removePod', pod: 'p1' },
      ],
    });
    expect(states.map((s) => s.counts.setUp)).toEqual([1, 2, 2]);
    expect(states[1]?.operations).toEqual([
      {
        volume: 'fake-plugin-d1/d1',
        pod: '',
        name: 'volume_mount',
        pending: false,
        durationBeforeRetry: '1s',
        lastError: 'MountVolume.SetUp failed for volume "fail-setup-volume" (UniqueName: "fake-plugin-d1/d1") pod "p1" (UID: "p1uid") : mounting volume failed',
      },
    ]);
    expect(states[2]?.volumes).toEqual([]);
    expect(states[2]?.counts).toMatchObject({ detach: 1, unmountDevice: 1, tearDown: 0 });
  });

  it('reconstructs after a restart a mount whose pod was deleted while down, and tears it down', async () => {
    const states = await playOnEngine({
      steps: [
        { op: 'addPod', pod: 'p1', volumes: [vol('vol', 'd1')] },
        { op: 'restart', removed: ['p1'] },
      ],
    });
    expect(states[0]?.volumes[0]?.pods).toEqual({ p1uid: 'VolumeMounted' });
    expect(states[1]?.volumes).toEqual([]);
    expect(states[1]?.counts.tearDown).toBe(1);
  });

  it('fails, marks uncertain and hangs the next call an outcome step names, then passes calls through', async () => {
    const states = await playOnEngine({
      steps: [
        { op: 'outcome', disk: 'd1', call: 'attach', outcome: 'final' },
        { op: 'outcome', disk: 'd2', call: 'setUp', outcome: 'uncertain' },
        { op: 'outcome', disk: 'd3', call: 'mountDevice', outcome: 'hang' },
        { op: 'addPod', pod: 'p1', volumes: [vol('vol', 'd1'), vol('vol', 'd2'), vol('vol', 'd3')] },
        { op: 'advance', ms: 700 },
      ],
    });
    const at3 = states[3];
    expect(at3?.operations.map((o) => [o.volume, o.pending, o.lastError.replace(/.* : /, '')])).toEqual([
      ['fake-plugin-d1/d1', false, 'fake attach final error'],
      ['fake-plugin-d2/d2', false, 'fake setUp uncertain error'],
      ['fake-plugin-d3/d3', true, ''],
    ]);
    expect(at3?.volumes.find((v) => v.volume === 'fake-plugin-d2/d2')?.pods).toEqual({ p1uid: 'VolumeMountUncertain' });
    // Intercepted calls are not counted: d1's retried attach and d2's retried SetUp pass through.
    expect(states[4]?.counts).toMatchObject({ attach: 3, setUp: 2, mountDevice: 2 });
    expect(states[4]?.operations.map((o) => o.volume)).toEqual(['fake-plugin-d3/d3']);
  });
});

describe('Outcomes', () => {
  it('a hung call is released when a process stops; one that starts while it stops returns at once; after the stop a hang hangs again', async () => {
    // Arrange: three calls set to hang.
    const o = new Outcomes();
    o.set('d1', 'volumesAreAttached', 'hang');
    o.set('d2', 'volumesAreAttached', 'hang');
    const settled: string[] = [];
    const track = (name: string, p: Promise<unknown>): Promise<void> =>
      p.then(
        () => void settled.push(`${name} ok`),
        (err: unknown) => void settled.push(`${name} ${(err as Error).message}`),
      );
    const first = track('d1', o.take('d1', 'volumesAreAttached', () => Promise.resolve('passed')));

    // Act: the stop releases d1; d2's call starts during the stop (an operation the stopping
    // process had started) and must not hang, or the stop would wait forever.
    await o.whileStopping(async () => {
      await first;
      await track('d2', o.take('d2', 'volumesAreAttached', () => Promise.resolve('passed')));
    });
    o.set('d3', 'volumesAreAttached', 'hang');
    void track('d3', o.take('d3', 'volumesAreAttached', () => Promise.resolve('passed')));
    await new Promise((resolve) => setImmediate(resolve));

    // Assert
    expect(settled).toEqual(['d1 fake volumesAreAttached released', 'd2 fake volumesAreAttached released']);
    o.releaseHung();
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled.at(-1)).toBe('d3 fake volumesAreAttached released');
  });
});
