/**
 * React hooks over the agent cache. Views call these; they never fetch or hold server data in
 * component state.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useRef, useSyncExternalStore } from 'react';
import type { Snapshot } from '../api/index.ts';
import { realClock } from '../clock/clock.ts';
import { INITIAL_CONNECTION_STATE, agentConnectionOptions, agentSnapshotOptions, type AgentConnectionState } from './queries.ts';
import { getAgentStreamHub } from './stream-hub.ts';

/** Keeps the tab's live connection to `agent` open while the calling component is mounted. */
function useAgentStream(agent: string): void {
  const client = useQueryClient();
  useEffect(() => getAgentStreamHub(client).subscribe(agent), [client, agent]);
}

/** The agent's live snapshot; `data` is `undefined` until the first one arrived (or was prefetched). */
export function useAgentSnapshot(agent: string) {
  useAgentStream(agent);
  return useQuery(agentSnapshotOptions(agent));
}

/**
 * `select(snapshot)` of the agent's live snapshot. Pass a stable function (module-level or
 * memoized): it then runs once per snapshot, and the component re-renders only when its result
 * changes.
 */
export function useAgentSelect<T>(agent: string, select: (snapshot: Snapshot) => T) {
  useAgentStream(agent);
  return useQuery({ ...agentSnapshotOptions(agent), select });
}

/** The agent's connection state; {@link INITIAL_CONNECTION_STATE} before the hub reported. */
export function useAgentConnection(agent: string): AgentConnectionState {
  useAgentStream(agent);
  return useQuery(agentConnectionOptions(agent)).data ?? INITIAL_CONNECTION_STATE;
}

// A shared ticker per interval: one timer for every countdown on the page.

interface Ticker {
  listeners: Set<() => void>;
  timer: ReturnType<typeof setTimeout> | null;
}

const tickers = new Map<number, Ticker>();

function tick(intervalMs: number): number {
  return Math.floor(realClock.now() / intervalMs) * intervalMs;
}

function subscribeTicker(intervalMs: number, listener: () => void): () => void {
  let ticker = tickers.get(intervalMs);
  if (ticker === undefined) {
    ticker = { listeners: new Set(), timer: null };
    tickers.set(intervalMs, ticker);
  }
  const t = ticker;
  t.listeners.add(listener);
  const arm = (): void => {
    // Fire on interval boundaries, so every countdown on the page changes at the same moment.
    t.timer = setTimeout(() => {
      for (const l of [...t.listeners]) l();
      arm();
    }, intervalMs - (realClock.now() % intervalMs) + 1);
  };
  if (t.timer === null) arm();
  return () => {
    t.listeners.delete(listener);
    if (t.listeners.size === 0 && t.timer !== null) {
      clearTimeout(t.timer);
      t.timer = null;
    }
  };
}

/**
 * True inside a part of the page the browser does not render (a lazy panel off screen, see
 * components/shared/panel.tsx): {@link useNow} there keeps its last value and leaves the shared
 * timer, so relative times nobody sees do not re-render every second (hundreds of them on a busy
 * node made the one-second tick a task of about 100 ms; issue "Performance", requirement 2).
 * Once the part is shown again it reads the time at once.
 */
export const ClockPausedContext = createContext(false);

const NO_SUBSCRIPTION = (): (() => void) => () => undefined;

/**
 * The browser's time, rounded down to `intervalMs` and updated on each boundary; every caller
 * with the same interval shares one timer. During server rendering it is the server's time
 * (relative texts are marked `suppressHydrationWarning`). Frozen while {@link ClockPausedContext}
 * is true.
 */
export function useNow(intervalMs = 1000): number {
  const paused = useContext(ClockPausedContext);
  const last = useRef<number | null>(null);
  const subscribe = useCallback((listener: () => void) => subscribeTicker(intervalMs, listener), [intervalMs]);
  const read = (): number => {
    if (!paused || last.current === null) last.current = tick(intervalMs);
    return last.current;
  };
  return useSyncExternalStore(paused ? NO_SUBSCRIPTION : subscribe, read, read);
}
