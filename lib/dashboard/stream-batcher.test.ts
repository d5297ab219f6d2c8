import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { applyDelta, computeDelta, normalizeSnapshot, type AgentStreamEvent, type Operation, type Snapshot } from '../api/index.ts';
import { exampleSnapshot, generatedOperation, largeSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { realClock } from '../clock/clock.ts';
import { STREAM_FLUSH_INTERVAL_MS, createStreamBatcher } from './stream-batcher.ts';

// applyDelta is counted (and still applied) to check that a burst is applied once per flush.
vi.mock('../api/index.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../api/index.ts')>();
  return { ...actual, applyDelta: vi.fn(actual.applyDelta) };
});

const s42 = normalizeSnapshot(exampleSnapshot());
const s43: Snapshot = { ...s42, seq: 43, statesSynced: false };
const s44: Snapshot = { ...s43, seq: 44, operations: [] };
const s45: Snapshot = { ...s44, seq: 45, sourceErrors: [{ file: '/etc/kubernetes/manifests/bad.yaml', message: 'yaml: line 3' }] };
const snap = (snapshot: Snapshot): AgentStreamEvent => ({ type: 'snapshot', snapshot });
const delta = (a: Snapshot, b: Snapshot): AgentStreamEvent => ({ type: 'delta', delta: computeDelta(a, b) });

function setup(initial: Snapshot | null = null) {
  const flushed: Snapshot[] = [];
  const gaps: string[] = [];
  const batcher = createStreamBatcher({
    clock: realClock,
    initial,
    onFlush: (s) => flushed.push(s),
    onGap: (e) => gaps.push(e.message),
  });
  return { batcher, flushed, gaps };
}

describe('the stream batcher', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a snapshot then deltas fold into the agent’s latest state', async () => {
    // Arrange
    const { batcher, flushed } = setup();

    // Act
    batcher.push(snap(s42));
    batcher.push(delta(s42, s43));
    batcher.push(delta(s43, s44));
    await vi.advanceTimersByTimeAsync(0);

    // Assert
    expect(flushed).toHaveLength(1);
    expect(flushed[0]).toEqual(normalizeSnapshot(s44));
  });

  it('a burst of deltas renders at most once per flush interval (32 ms)', async () => {
    // Arrange
    const { batcher, flushed } = setup(s42);
    const states = [s42, s43, s44, s45];
    const step = STREAM_FLUSH_INTERVAL_MS / 4;

    // Act: one delta every quarter interval, within one interval
    for (let i = 1; i < states.length; i++) {
      batcher.push(delta(states[i - 1] as Snapshot, states[i] as Snapshot));
      await vi.advanceTimersByTimeAsync(step);
    }
    const afterBurst = flushed.length;
    await vi.advanceTimersByTimeAsync(STREAM_FLUSH_INTERVAL_MS);

    // Assert: the first delta flushed at once (leading edge), the rest one interval later, together
    expect(afterBurst).toBe(1);
    expect(flushed.map((s) => s.seq)).toEqual([43, 45]);
  });

  it('stale deltas (a duplicate after a resume) are ignored and cause no render', async () => {
    // Arrange
    const { batcher, flushed, gaps } = setup(s44);

    // Act
    batcher.push(delta(s42, s43));
    batcher.push(delta(s43, s44));
    await vi.advanceTimersByTimeAsync(1_000);

    // Assert
    expect(batcher.state).toBe(s44);
    expect(flushed).toEqual([]);
    expect(gaps).toEqual([]);
  });

  it('a delta from the future is a gap: reported once, then deltas are dropped until resume', async () => {
    // Arrange
    const { batcher, flushed, gaps } = setup(s42);

    // Act
    batcher.push(delta(s43, s44));
    batcher.push(delta(s44, s45));
    await vi.advanceTimersByTimeAsync(1_000);

    // Assert
    expect(gaps).toEqual(['delta 43->44 does not apply to snapshot 42']);
    expect(batcher.gapped).toBe(true);
    expect(batcher.state?.seq).toBe(42);
    expect(flushed).toEqual([]);
  });

  it('after a gap, resuming accepts the deltas that follow the state again', async () => {
    // Arrange
    const { batcher, flushed } = setup(s42);
    batcher.push(delta(s43, s44));

    // Act
    batcher.resume();
    batcher.push(delta(s42, s43));
    await vi.advanceTimersByTimeAsync(0);

    // Assert
    expect(flushed.map((s) => s.seq)).toEqual([43]);
  });

  it('a snapshot after a gap replaces the state and clears the gap', async () => {
    // Arrange
    const { batcher, flushed } = setup(s42);
    batcher.push(delta(s44, s45));

    // Act
    batcher.push(snap(s45));
    batcher.push(delta(s45, { ...s45, seq: 46, statesSynced: true }));
    await vi.advanceTimersByTimeAsync(0);

    // Assert
    expect(batcher.gapped).toBe(false);
    expect(flushed.map((s) => s.seq)).toEqual([46]);
  });

  it('a delta before any snapshot is a gap', () => {
    const { batcher, gaps } = setup(null);
    batcher.push(delta(s42, s43));
    expect(gaps).toEqual(['delta 42->43 does not apply to snapshot (none)']);
  });

  it('dispose cancels a scheduled flush', async () => {
    const { batcher, flushed } = setup(s42);
    batcher.push(delta(s42, s43));
    batcher.dispose();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(flushed).toEqual([]);
  });

  /** A node with 50 pods and the snapshots after each of `count` operation changes. */
  function history(count: number): Snapshot[] {
    const states = [normalizeSnapshot(largeSnapshot(50))];
    for (let i = 0; i < count; i++) {
      const prev = states[states.length - 1] as Snapshot;
      const op: Operation = generatedOperation(i % 7, 1 + Math.floor(i / 7));
      // Every third change also ends an operation, every fifth adds an event (the ring keeps 3).
      const operations = normalizeSnapshot({ ...prev, operations: [...prev.operations.filter((o) => o.volume !== op.volume), op] }).operations;
      states.push({
        ...prev,
        seq: prev.seq + 1,
        operations: i % 3 === 2 ? operations.slice(1) : operations,
        recentEvents: i % 5 === 0 ? [...prev.recentEvents, { time: i, type: 'Normal' as const, reason: 'R', podUid: null, message: String(i) }].slice(-3) : prev.recentEvents,
      });
    }
    return states;
  }

  it('a burst of deltas between flushes ends in exactly the state of folding them one by one, applied once', async () => {
    // Arrange
    const states = history(40);
    const { batcher, flushed } = setup(states[0]);
    vi.mocked(applyDelta).mockClear();

    // Act: every delta in one go, as one network chunk delivers them
    for (let i = 1; i < states.length; i++) batcher.push(delta(states[i - 1] as Snapshot, states[i] as Snapshot));
    await vi.advanceTimersByTimeAsync(0);

    // Assert
    expect(flushed).toHaveLength(1);
    expect(flushed[0]).toEqual(normalizeSnapshot(states[states.length - 1] as Snapshot));
    expect(applyDelta).toHaveBeenCalledTimes(1);
  });

  it('reading the state mid-burst gives every delta accepted so far', () => {
    const states = history(6);
    const { batcher } = setup(states[0]);
    for (let i = 1; i <= 3; i++) batcher.push(delta(states[i - 1] as Snapshot, states[i] as Snapshot));
    expect(batcher.state).toEqual(normalizeSnapshot(states[3] as Snapshot));
    for (let i = 4; i <= 6; i++) batcher.push(delta(states[i - 1] as Snapshot, states[i] as Snapshot));
    expect(batcher.state).toEqual(normalizeSnapshot(states[6] as Snapshot));
  });

  it('a gap after queued deltas keeps them and names the seq they reached', async () => {
    // Arrange
    const states = history(5);
    const { batcher, flushed, gaps } = setup(states[0]);

    // Act: 1→2 and 2→3 follow; 4→5 does not
    batcher.push(delta(states[0] as Snapshot, states[1] as Snapshot));
    batcher.push(delta(states[1] as Snapshot, states[2] as Snapshot));
    batcher.push(delta(states[3] as Snapshot, states[4] as Snapshot));
    await vi.advanceTimersByTimeAsync(0);

    // Assert
    expect(gaps).toEqual([`delta ${(states[3] as Snapshot).seq}->${(states[4] as Snapshot).seq} does not apply to snapshot ${(states[2] as Snapshot).seq}`]);
    expect(flushed.map((f) => f.seq)).toEqual([(states[2] as Snapshot).seq]);
    expect(flushed[0]).toEqual(normalizeSnapshot(states[2] as Snapshot));
  });

  it('a delta that repeats an upserted key is applied as the reducer applies it', async () => {
    // Arrange
    const op = s42.operations[0] as Operation;
    const { batcher, flushed } = setup(s42);
    const odd = { fromSeq: 43, seq: 44, operations: { upsert: [op, { ...op, failures: 9 }] } };

    // Act
    batcher.push(delta(s42, s43));
    batcher.push({ type: 'delta', delta: odd });
    await vi.advanceTimersByTimeAsync(0);

    // Assert
    expect(flushed[0]).toEqual(applyDelta(applyDelta(s42, computeDelta(s42, s43)), odd));
  });
});
