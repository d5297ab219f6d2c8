import { describe, expect, it } from 'vitest';
import {
  INITIAL_RUN_TRACKER,
  RECONSTRUCTION_FIRST_MS,
  detectRestart,
  isJustAfterRestart,
  observeCountsText,
  observeNodes,
  reconstructionSentence,
  restartBannerText,
  staleStamp,
  trackAgentRun,
} from './blind-view.ts';

/** The UTC time of day: the views pass the local one. */
const utc = (at: number): string => new Date(at).toISOString().slice(11, 19);

const T = Date.UTC(2026, 11, 1, 18, 59, 27);

describe('staleStamp', () => {
  it('stamps the data as of the last bytes while reconnecting or unavailable', () => {
    expect(staleStamp({ phase: 'reconnecting', lastSeenAt: T, disconnectedSince: T + 5_000 }, utc)).toEqual({ stale: true, text: 'as of 18:59:27 (agent unreachable)' });
    expect(staleStamp({ phase: 'unavailable', lastSeenAt: null, disconnectedSince: T }, utc).text).toBe('as of 18:59:27 (agent unreachable)');
    expect(staleStamp({ phase: 'unavailable', lastSeenAt: null, disconnectedSince: null }, utc).text).toBe('as of an unknown time (agent unreachable)');
  });

  it('does not stamp live, connecting or paused (hidden tab) data', () => {
    for (const phase of ['live', 'connecting', 'paused'] as const) {
      expect(staleStamp({ phase, lastSeenAt: T, disconnectedSince: phase === 'paused' ? T : null }, utc)).toEqual({ stale: false, text: null });
    }
  });
});

describe('detectRestart and trackAgentRun', () => {
  it('sees a restart in a newer startedAt, with the previous run’s uptime up to the last data seen', () => {
    const restart = detectRestart({ startedAt: T - 3_600_000, lastSeenAt: T - 60_000 }, { startedAt: T });
    expect(restart).toEqual({ restartedAt: T, previousStartedAt: T - 3_600_000, previousUptimeMs: 3_540_000 });
    expect(restartBannerText(restart ?? { restartedAt: 0, previousStartedAt: 0, previousUptimeMs: 0 }, utc)).toBe('The agent restarted at 18:59:27; its previous run was up 59 min.');
  });

  it('sees no restart without a previous run, for the same run, or for an older (cached) one', () => {
    expect(detectRestart(null, { startedAt: T })).toBeNull();
    expect(detectRestart({ startedAt: T, lastSeenAt: T + 10 }, { startedAt: T })).toBeNull();
    expect(detectRestart({ startedAt: T, lastSeenAt: T + 10 }, { startedAt: T - 1 })).toBeNull();
  });

  it('caps the previous uptime at the new start (a browser clock ahead of the agent’s)', () => {
    expect(detectRestart({ startedAt: T - 1_000, lastSeenAt: T + 5_000 }, { startedAt: T })?.previousUptimeMs).toBe(1_000);
  });

  it('tracks the run across snapshots and keeps the last restart until the next one', () => {
    // Arrange + Act: first snapshot, more of the same run, then a new process.
    let tracker = trackAgentRun(INITIAL_RUN_TRACKER, { startedAt: T - 120_000 }, T - 100_000);
    expect(tracker.restart).toBeNull();
    tracker = trackAgentRun(tracker, { startedAt: T - 120_000 }, T - 20_000);
    expect(tracker.run).toEqual({ startedAt: T - 120_000, lastSeenAt: T - 20_000 });
    tracker = trackAgentRun(tracker, { startedAt: T }, T + 2_000);

    // Assert
    expect(tracker.restart).toEqual({ restartedAt: T, previousStartedAt: T - 120_000, previousUptimeMs: 100_000 });
    expect(tracker.run).toEqual({ startedAt: T, lastSeenAt: T + 2_000 });
    const later = trackAgentRun(tracker, { startedAt: T }, T + 9_000);
    expect(later.restart).toBe(tracker.restart);
    expect(later.run?.lastSeenAt).toBe(T + 9_000);
  });

  it('ignores a snapshot of an older run', () => {
    const tracker = trackAgentRun(INITIAL_RUN_TRACKER, { startedAt: T }, T + 1_000);
    expect(trackAgentRun(tracker, { startedAt: T - 50_000 }, T + 2_000)).toBe(tracker);
  });
});

describe('isJustAfterRestart', () => {
  it('is true for five minutes after the agent started, then false', () => {
    expect(RECONSTRUCTION_FIRST_MS).toBe(5 * 60_000);
    expect(isJustAfterRestart(T, T - 500)).toBe(true);
    expect(isJustAfterRestart(T, T + RECONSTRUCTION_FIRST_MS - 1)).toBe(true);
    expect(isJustAfterRestart(T, T + RECONSTRUCTION_FIRST_MS)).toBe(false);
  });
});

describe('reconstructionSentence', () => {
  const outcomes = (reconstructed: number, confirmed: number, cleaned: number, failed: number) => ({ reconstructed, 'confirmed-mounted': confirmed, 'cleaned-up': cleaned, failed });

  it('says what was found and how long it took, in plain words', () => {
    expect(reconstructionSentence({ state: 'done', startedAt: T + 100, finishedAt: T + 119, outcomes: outcomes(0, 7, 0, 0) }, T, utc)).toBe(
      'After the restart at 18:59:27: 7 volume directories found, all 7 confirmed, 0 uncertain, 0 cleaned up, took 19 ms',
    );
  });

  it('names partial confirmation, uncertain, cleaned-up and failed directories, and long scans in seconds', () => {
    expect(reconstructionSentence({ state: 'done', startedAt: T, finishedAt: T + 2_500, outcomes: outcomes(2, 1, 1, 1) }, T, utc)).toBe(
      'After the restart at 18:59:27: 5 volume directories found, 1 confirmed, 2 uncertain, 1 cleaned up, 1 failed, took 2 s',
    );
    expect(reconstructionSentence({ state: 'done', startedAt: T, finishedAt: T + 3, outcomes: outcomes(0, 1, 0, 0) }, T, utc)).toBe(
      'After the restart at 18:59:27: 1 volume directory found, all 1 confirmed, 0 uncertain, 0 cleaned up, took 3 ms',
    );
  });

  it('says when nothing was found, and while pending or running', () => {
    expect(reconstructionSentence({ state: 'done', startedAt: T, finishedAt: T + 4, outcomes: outcomes(0, 0, 0, 0) }, T, utc)).toBe(
      'After the restart at 18:59:27: no volume directories found, 0 confirmed, 0 uncertain, 0 cleaned up, took 4 ms',
    );
    expect(reconstructionSentence({ state: 'pending', startedAt: null, finishedAt: null, outcomes: outcomes(0, 0, 0, 0) }, T, utc)).toBe(
      'After the restart at 18:59:27: reconstruction has not started yet',
    );
    expect(reconstructionSentence({ state: 'running', startedAt: T, finishedAt: null, outcomes: outcomes(3, 0, 0, 0) }, T, utc)).toBe(
      'After the restart at 18:59:27: reconstruction is running, 3 volume directories found so far',
    );
  });
});

describe('observeNodes', () => {
  it('lists the nodes in observe mode with their orphan and attachment-error counts', () => {
    const nodes = observeNodes([
      { name: 'node-a', summary: { mode: 'observe', observe: { orphans: 2, attachErrors: 1 } } },
      { name: 'node-b', summary: { mode: 'managed', observe: null } },
      { name: 'node-c', summary: null },
      { name: 'node-d', summary: { mode: 'observe', observe: null } },
    ]);
    expect(nodes).toEqual([
      { name: 'node-a', counts: { orphans: 2, attachErrors: 1 } },
      { name: 'node-d', counts: null },
    ]);
    expect(nodes.map((n) => observeCountsText(n.counts))).toEqual(['2 orphaned pod directories, 1 attachment error', 'counts not reported']);
    expect(observeCountsText({ orphans: 1, attachErrors: 0 })).toBe('1 orphaned pod directory, 0 attachment errors');
  });
});
