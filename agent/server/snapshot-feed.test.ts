import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { uniquePodName } from '../../lib/volume/types.ts';
import { gcePdVolume, Harness, makePod } from '../../lib/volumemanager/testing/harness.ts';
import { SnapshotBuilder } from './snapshot-builder.ts';
import { SnapshotFeed } from './snapshot-feed.ts';
import { FakeAgentRuntime } from './testing/fake-agent-runtime.ts';

/** A feed over a fake runtime, subscribed to the two notifications the server subscribes it to. */
function setup(): { h: Harness; runtime: FakeAgentRuntime; feed: SnapshotFeed; builder: SnapshotBuilder; close(): Promise<void> } {
  const h = new Harness();
  const runtime = new FakeAgentRuntime(h);
  const builder = new SnapshotBuilder(runtime, () => []);
  const feed = new SnapshotFeed({ builder, clock: h.clock, logger: runtime.logger });
  const markChanged = (): void => {
    feed.markChanged();
  };
  const unsubscribe = [h.vm.onChange(markChanged), runtime.onChange(markChanged)];
  return {
    h,
    runtime,
    feed,
    builder,
    close: async () => {
      for (const off of unsubscribe) off();
      feed.stop();
      await h.close();
    },
  };
}

describe('SnapshotFeed', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  const start = (): ReturnType<typeof setup> => {
    const s = setup();
    close = () => s.close();
    return s;
  };

  it('keeps no timer and builds nothing while nothing changes', async () => {
    // Arrange
    const timersBefore = new Harness().clock.pendingTimers();
    const { h, feed, builder } = start();
    const build = vi.spyOn(builder, 'build');

    // Act: ten minutes of an idle agent
    await h.clock.advance(600_000);

    // Assert
    expect(h.clock.pendingTimers()).toBe(timersBefore);
    expect(build).not.toHaveBeenCalled();
    expect(feed.current().seq).toBe(0);
  });

  // Each change is made outside the two worlds and the operations table, then published by a
  // flush without advancing time: only a change notification marks the feed dirty.
  it.each<{ name: string; change: (s: ReturnType<typeof setup>) => void | Promise<void>; shows: (snapshot: Snapshot) => unknown; want: unknown }>([
    {
      name: 'a pod error the populator adds',
      change: ({ h }) => {
        h.dsw.addErrorToPod(uniquePodName('uid-x'), 'error processing PVC ns/c: PVC is not bound');
      },
      shows: (s) => s.podErrors,
      want: { 'uid-x': ['error processing PVC ns/c: PVC is not bound'] },
    },
    {
      name: 'source errors',
      change: ({ runtime }) => {
        runtime.setSourceErrors([{ file: 'bad.yaml', message: 'bad.yaml: not YAML' }]);
      },
      shows: (s) => s.sourceErrors,
      want: [{ file: 'bad.yaml', message: 'bad.yaml: not YAML' }],
    },
    {
      name: 'drivers',
      change: ({ runtime }) => {
        runtime.setDrivers([{ name: 'd.example.com', endpoint: '/csi.sock', registered: true, nodeId: 'n', capabilities: [], lastProbeAt: 1, lastError: null }]);
      },
      shows: (s) => s.drivers.map((d) => d.name),
      want: ['d.example.com'],
    },
    {
      name: 'the Node’s conditions',
      change: ({ runtime }) => {
        runtime.setNodeConditions([{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', lastTransitionTime: 1 }]);
      },
      shows: (s) => s.nodeConditions?.map((c) => `${c.type}=${c.status}`),
      want: ['Ready=False'],
    },
    {
      name: 'a mount health change',
      change: ({ runtime }) => {
        const entries = [{ path: '/r/pods/u/volumes/x/v', podUid: 'u', volume: 'v', kind: 'pod' as const, state: 'hung' as const, error: 'no answer', checkedAt: 1, since: 1 }];
        runtime.mountHealth = () => entries;
        runtime.notifyChanged();
      },
      shows: (s) => s.mountHealth.map((h) => h.state),
      want: ['hung'],
    },
    {
      name: 'an unmount blocker report',
      change: ({ runtime }) => {
        const report = { path: '/r/p', holders: [], truncated: false, incomplete: null, processesScanned: 1, checkedAt: 1, durationMs: 1 };
        const entries = [{ operationName: 'volume_unmount', volume: 'v', podUid: 'u', report }];
        runtime.unmountBlockers = () => entries;
        runtime.notifyChanged();
      },
      shows: (s) => s.unmountBlockers.map((b) => b.operationName),
      want: ['volume_unmount'],
    },
    {
      name: 'an attach verification',
      change: async ({ h }) => {
        await h.vm.verifyAttachedVolumes();
      },
      shows: (s) => s.attachVerification.lastRunAt !== null,
      want: true,
    },
  ])('publishes $name without a poll', async ({ change, shows, want }) => {
    // Arrange
    const s = start();
    const before = s.feed.current();

    // Act
    await change(s);
    const after = s.feed.flush();

    // Assert
    expect(shows(after)).toEqual(want);
    expect(shows(after)).not.toEqual(shows(before));
    expect(after.seq).toBe(1);
  });

  it('publishes pod errors popped by a wait for the pod', () => {
    const { h, feed } = start();
    h.dsw.addErrorToPod(uniquePodName('uid-x'), 'no plugin');
    expect(feed.flush().podErrors).toEqual({ 'uid-x': ['no plugin'] });

    h.dsw.popPodErrors(uniquePodName('uid-x'));

    expect(feed.flush().podErrors).toEqual({});
  });

  it("publishes the reconciler's sync and the finished reconstruction, which change neither world", async () => {
    // Arrange: an engine with nothing to mount
    const { h, feed } = start();
    const notified = vi.fn();
    h.vm.onChange(notified);

    // Act
    h.start();
    await h.until(() => h.vm.reconcilerStatesHasBeenSynced() && h.vm.getReconstructionReport().state === 'done');
    const snapshot = feed.flush();

    // Assert
    expect(h.vm.getActualVolumes()).toEqual([]);
    expect(h.vm.getDesiredVolumes()).toEqual([]);
    expect(notified).toHaveBeenCalled();
    expect(snapshot.statesSynced).toBe(true);
    expect(snapshot.reconstruction.state).toBe('done');
  });

  it('publishes a pod source that is no longer synced', async () => {
    const { h, runtime, feed } = start();
    h.start();
    await h.until(() => h.vm.reconcilerStatesHasBeenSynced());
    expect(feed.flush().statesSynced).toBe(true);

    runtime.synced = false;

    expect(feed.flush().statesSynced).toBe(false);
  });

  it('publishes a mounted pod of the engine to a subscribed stream after the coalescing interval, and then schedules nothing', async () => {
    const { h, feed } = start();
    const published: number[] = [];
    feed.subscribe((entry) => published.push(entry.delta.seq));
    h.pods.add(makePod([gcePdVolume()]));
    h.start();
    await h.until(() => h.asw.getMountedVolumes().length === 1);

    await h.clock.advance(50);

    expect(feed.current().actual.volumes.map((v) => v.uniqueVolumeName)).toEqual(['fake-plugin/fake-device1']);
    expect(published.at(-1)).toBe(feed.current().seq);
    expect(feed.flush()).toBe(feed.current());
  });

  it('without a subscribed stream builds nothing on a change until a reader asks, then publishes every change since in one delta', async () => {
    // Arrange
    const { h, runtime, feed, builder } = start();
    const build = vi.spyOn(builder, 'build');
    const timersBefore = h.clock.pendingTimers();

    // Act: two changes, and time for many coalescing intervals
    runtime.setSourceErrors([{ file: 'a.yaml', message: 'a.yaml: not YAML' }]);
    h.dsw.addErrorToPod(uniquePodName('uid-x'), 'no plugin');
    await h.clock.advance(10_000);

    // Assert: nothing built or scheduled; the next reader gets both changes as seq 1
    expect(build).not.toHaveBeenCalled();
    expect(h.clock.pendingTimers()).toBe(timersBefore);
    const read = feed.publishIfDue();
    expect(read.seq).toBe(1);
    expect(read.sourceErrors.map((e) => e.file)).toEqual(['a.yaml']);
    expect(read.podErrors).toEqual({ 'uid-x': ['no plugin'] });
    expect(feed.deltasSince(0)?.map((e) => e.delta.seq)).toEqual([1]);
  });

  it('a stream that subscribes while changes wait gets them after the coalescing interval', async () => {
    const { h, runtime, feed } = start();
    feed.flush();
    runtime.setSourceErrors([{ file: 'a.yaml', message: 'a.yaml: not YAML' }]);
    const published: number[] = [];

    feed.subscribe((entry) => published.push(entry.delta.seq));
    await h.clock.advance(50);

    expect(published).toEqual([1]);
    expect(feed.current().sourceErrors.map((e) => e.file)).toEqual(['a.yaml']);
  });

  it('publishIfOlderThan publishes pending changes only once the last build is that old', async () => {
    const { h, runtime, feed } = start();
    runtime.setSourceErrors([{ file: 'a.yaml', message: 'a.yaml: not YAML' }]);
    expect(feed.flush().seq).toBe(1);
    runtime.setSourceErrors([]);

    await h.clock.advance(999);
    expect(feed.publishIfOlderThan(1_000).seq).toBe(1);
    expect(feed.publishIfDue().seq).toBe(2);

    runtime.setSourceErrors([{ file: 'b.yaml', message: 'b.yaml: not YAML' }]);
    await h.clock.advance(999);
    expect(feed.publishIfOlderThan(1_000).seq).toBe(2);
    await h.clock.advance(1);
    expect(feed.publishIfOlderThan(1_000).seq).toBe(3);
  });
});

describe('SnapshotFeed journal bytes', () => {
  it('keeps at most maxJournalBytes of deltas (the newest always): a reconnect behind the cut gets a snapshot, one after it the deltas', async () => {
    const h = new Harness();
    const runtime = new FakeAgentRuntime(h);
    const feed = new SnapshotFeed({ builder: new SnapshotBuilder(runtime, () => []), clock: h.clock, logger: runtime.logger, maxJournalBytes: 3000 });
    const start = feed.flush().seq;
    for (let i = 0; i < 4; i++) {
      runtime.emitEvent({ type: 'Warning', reason: `R${i}`, podUid: null, message: 'x'.repeat(1000) });
      feed.markChanged();
      feed.flush();
    }

    const fromStart = feed.deltasSince(start);
    const fromSecondLast = feed.deltasSince(start + 2);
    const fromLast = feed.deltasSince(start + 3);

    expect(feed.current().seq).toBe(start + 4);
    expect(fromStart).toBeNull();
    expect(fromSecondLast?.map((e) => e.delta.seq)).toEqual([start + 3, start + 4]);
    expect(fromLast?.map((e) => e.delta.seq)).toEqual([start + 4]);
    // Only the sequence numbers and the text are kept, not the delta's objects.
    expect(fromLast?.map((e) => Object.keys(e.delta).sort())).toEqual([['fromSeq', 'seq']]);
    expect(fromLast?.[0]?.event).toContain('R3');
    feed.stop();
    await h.close();
  });
});
