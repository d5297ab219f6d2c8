'use client';

import { useEffect, useRef, useState } from 'react';
import { INITIAL_RUN_TRACKER, trackAgentRun, type AgentRestart, type RunTracker } from '../../lib/dashboard/blind-view.ts';
import type { Snapshot } from '../../lib/api/index.ts';
import { realClock, type Clock } from '../../lib/clock/clock.ts';

/**
 * The last restart of the agent this tab saw: a snapshot with a newer `agent.startedAt` than the
 * one before (see `trackAgentRun`). The tab remembers only what it saw, so a page opened after
 * the restart has none (the reconstruction panel still goes first, from `startedAt`).
 */
export function useAgentRestart(snapshot: Pick<Snapshot, 'agent' | 'seq'>, clock: Pick<Clock, 'now'> = realClock): AgentRestart | null {
  const tracker = useRef<RunTracker>(INITIAL_RUN_TRACKER);
  const [restart, setRestart] = useState<AgentRestart | null>(null);
  const startedAt = snapshot.agent.startedAt;
  const seq = snapshot.seq;
  // Once per snapshot (a new seq or a new process), so the run's `lastSeenAt` follows the data.
  useEffect(() => {
    tracker.current = trackAgentRun(tracker.current, { startedAt }, clock.now());
    setRestart(tracker.current.restart);
  }, [startedAt, seq, clock]);
  return restart;
}

/**
 * True until `deadline` (epoch ms), then false: one timer, not a ticking clock, so the caller
 * re-renders once when the deadline passes.
 */
export function useBefore(deadline: number, clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'> = realClock): boolean {
  const [passed, setPassed] = useState<number | null>(null);
  const before = passed !== deadline && clock.now() < deadline;
  useEffect(() => {
    if (!before) return undefined;
    const timer = clock.setTimeout(() => {
      setPassed(deadline);
    }, deadline - clock.now());
    return () => {
      clock.clearTimeout(timer);
    };
  }, [before, deadline, clock]);
  return before;
}
