'use client';

import { createContext, useContext, useMemo, type ReactNode } from 'react';
import { staleStamp, type StaleStamp } from '../../lib/dashboard/blind-view.ts';
import { useAgentConnection } from '../../lib/dashboard/use-agent.ts';
import { timeOfDay } from './time-text.tsx';

/** The stamp of the agent whose data the panels below show; `null` outside an agent's page. */
const StaleContext = createContext<StaleStamp | null>(null);

/** The stamp every {@link Panel} (and {@link StaleFrame} without its own) shows. */
export function useStaleStamp(): StaleStamp | null {
  return useContext(StaleContext);
}

/** Provides `stamp` to the panels below (tests; pages use {@link StaleProvider}). */
export function StaleStampProvider({ stamp, children }: { stamp: StaleStamp; children: ReactNode }) {
  return <StaleContext.Provider value={stamp}>{children}</StaleContext.Provider>;
}

/**
 * Provides the agent's stamp to the panels of its page, and announces the change once for the
 * page (one polite live region; the panels' stamps are plain text, so a screen reader does not
 * hear the same sentence once per panel).
 */
export function StaleProvider({ agent, children }: { agent: string; children: ReactNode }) {
  const connection = useAgentConnection(agent);
  const { phase, lastSeenAt, disconnectedSince } = connection;
  const stamp = useMemo(() => staleStamp({ phase, lastSeenAt, disconnectedSince }, timeOfDay), [phase, lastSeenAt, disconnectedSince]);
  return (
    <StaleStampProvider stamp={stamp}>
      <p className="visually-hidden" aria-live="polite" role="status">
        {stamp.text !== null ? `Agent ${agent} is unreachable: the page shows its data ${stamp.text}.` : ''}
      </p>
      {children}
    </StaleStampProvider>
  );
}

/**
 * The stamp over a panel's top border: positioned, so it never moves the layout, and always
 * rendered (empty while live) so a stale state only changes its text. `data-stale` for tests.
 */
export function StaleMark({ stamp }: { stamp: StaleStamp | null }) {
  if (stamp === null) return null;
  return (
    <span className="stale-mark" data-stale={stamp.stale}>
      {stamp.text ?? ''}
    </span>
  );
}

/**
 * Dims `children` while the data is not live and stamps it "as of <time> (agent unreachable)".
 * `stamp` defaults to the page's (see {@link StaleProvider}).
 */
export function StaleFrame({ stamp, children, className }: { stamp?: StaleStamp; children: ReactNode; className?: string }) {
  const pageStamp = useStaleStamp();
  const s = stamp ?? pageStamp;
  return (
    <div className={`stale-frame${s?.stale === true ? ' is-stale' : ''}${className !== undefined ? ` ${className}` : ''}`}>
      <StaleMark stamp={s} />
      {children}
    </div>
  );
}
