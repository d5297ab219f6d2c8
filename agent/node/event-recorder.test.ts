import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/clock/fake-clock.ts';
import { EVENT_NOTE_LENGTH_LIMIT, isTruncatedMessage } from '../../lib/truncate-message.ts';
import { discardLogger, type Logger } from '../../lib/volume/logger.ts';
import { EVENT_NAME_LENGTH_LIMIT, RingEventRecorder } from './event-recorder.ts';

function recordingLogger(lines: string[]): Logger {
  const push = (level: string) => (msg: string) => {
    lines.push(`${level} ${msg}`);
  };
  return { debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
}

describe('RingEventRecorder', () => {
  it('keeps the latest events oldest first, with the pod uid for pod events, logs each and tells listeners', async () => {
    // Arrange
    const clock = new FakeClock(1_000);
    const lines: string[] = [];
    const recorder = new RingEventRecorder(clock, recordingLogger(lines), 2);
    let heard = 0;
    recorder.onEvent(() => heard++);

    // Act
    recorder.event({ kind: 'Pod', namespace: 'default', name: 'web', uid: 'u1' }, 'Warning', 'FailedMount', 'first');
    await clock.advance(5);
    recorder.event({ kind: 'Node', name: 'node-a' }, 'Normal', 'Something', 'second');
    await clock.advance(5);
    recorder.event({ kind: 'Pod', namespace: 'default', name: 'db', uid: 'u2' }, 'Normal', 'SuccessfulAttachVolume', 'third');

    // Assert
    expect(recorder.recent()).toEqual([
      { time: 1_005, type: 'Normal', reason: 'Something', podUid: null, message: 'second' },
      { time: 1_010, type: 'Normal', reason: 'SuccessfulAttachVolume', podUid: 'u2', message: 'third', podNamespace: 'default', podName: 'db' },
    ]);
    expect(lines).toEqual(['warn first', 'info second', 'info third']);
    expect(heard).toBe(3);
  });

  it('keeps and logs a 1 MB message (a driver\'s error details) cut to the event note limit, with the marker', () => {
    const lines: string[] = [];
    const recorder = new RingEventRecorder(new FakeClock(0), recordingLogger(lines));
    const message = `MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = Internal desc = ${'x'.repeat(1 << 20)}`;

    recorder.event({ kind: 'Pod', namespace: 'default', name: 'db', uid: 'u1' }, 'Warning', 'FailedMount', message);

    const kept = recorder.recent()[0]?.message ?? '';
    expect(kept.length).toBeLessThanOrEqual(EVENT_NOTE_LENGTH_LIMIT);
    expect(kept.startsWith('MountVolume.MountDevice failed for volume "pgdata" : rpc error: code = Internal desc = xxx')).toBe(true);
    expect(isTruncatedMessage(kept)).toBe(true);
    expect(lines).toEqual([`warn ${kept}`]);
  });
});

describe('RingEventRecorder with a file', () => {
  it('keeps the volume an event is about and loads the events again after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'events-'));
    try {
      const file = join(dir, 'volumescope', 'events.jsonl');
      const clock = new FakeClock(1_000);
      const first = new RingEventRecorder(clock, recordingLogger([]), 10, file);
      first.event({ kind: 'Pod', namespace: 'default', name: 'db', uid: 'u2' }, 'Warning', 'FailedMount', 'MountVolume.SetUp failed', 'kubernetes.io/csi/loop^pg');
      await first.flush();

      const second = new RingEventRecorder(clock, recordingLogger([]), 10, file);

      expect(second.recent()).toEqual([
        { time: 1_000, type: 'Warning', reason: 'FailedMount', podUid: 'u2', message: 'MountVolume.SetUp failed', volume: 'kubernetes.io/csi/loop^pg', podNamespace: 'default', podName: 'db' },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('RingEventRecorder bounds', () => {
  it('keeps reason, pod and volume names cut to EVENT_NAME_LENGTH_LIMIT and the message to the event note limit', () => {
    const recorder = new RingEventRecorder(new FakeClock(), discardLogger);
    const huge = 'n'.repeat(100_000);

    recorder.event({ kind: 'Pod', namespace: huge, name: huge, uid: huge }, 'Warning', huge, huge, huge);
    const [event] = recorder.recent();

    for (const text of [event?.reason, event?.podUid, event?.volume, event?.podNamespace, event?.podName]) expect(text?.length).toBeLessThanOrEqual(EVENT_NAME_LENGTH_LIMIT);
    expect(event?.message.length).toBeLessThanOrEqual(1024);
    expect(JSON.stringify(event).length).toBeLessThan(8 * 1024);
  });
});
