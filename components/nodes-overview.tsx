'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { memo, useMemo } from 'react';
import type { DiscoveryStatus } from '../lib/dashboard/discovery-status.ts';
import { nodeHref } from '../lib/dashboard/routes.ts';
import {
  SUMMARY_POLL_INTERVAL_MS,
  isPollStale,
  overviewCards,
  serverToBrowserTime,
  summariesQueryOptions,
  type OverviewCard,
  type OverviewStatus,
  type SummaryPoll,
} from '../lib/dashboard/summary.ts';
import { formatDuration, formatUtc } from '../lib/dashboard/time-format.ts';
import { useNow } from '../lib/dashboard/use-agent.ts';
import { NodeCounts, NodeFacts, ReconstructionLine } from './node-panels.tsx';
import { RelativeTime } from './time-text.tsx';

/** A configured agent as the overview lists it. */
export interface OverviewAgent {
  readonly name: string;
  readonly url: string;
}

/** After this long without live data, the indicator says "stale since …" (as on the node pages). */
const STALE_AFTER_MS = 30_000;

/**
 * A card's status line, in the look (and with the test id) of the node pages' connection
 * indicator; the state comes from the overview's poll, not from an event stream.
 */
function SummaryStatus({ agent, status }: { agent: string; status: OverviewStatus }) {
  const now = useNow(1000);
  let icon: string;
  let text: string;
  let tone: 'live' | 'warn' | 'bad' | 'idle';
  switch (status.phase) {
    case 'live':
      icon = '●';
      text = 'live';
      tone = 'live';
      break;
    case 'connecting':
    case 'paused':
      icon = '○';
      text = 'connecting…';
      tone = 'idle';
      break;
    case 'reconnecting':
    case 'unavailable': {
      const since = status.disconnectedSince ?? now;
      const stale = now - since >= STALE_AFTER_MS;
      icon = status.phase === 'unavailable' ? '✕' : '↻';
      const clock = new Date(since).toLocaleTimeString();
      if (status.phase === 'unavailable') text = stale ? `unreachable, stale since ${clock}` : `unreachable for ${formatDuration(now - since)}`;
      else text = stale ? `stale since ${clock}` : `reconnecting for ${formatDuration(now - since)}`;
      tone = status.phase === 'unavailable' || stale ? 'bad' : 'warn';
      break;
    }
  }
  return (
    <div className={`conn conn--${tone}`} data-testid="connection-status" data-phase={status.phase}>
      <span className="visually-hidden" aria-live="polite">
        {`${agent}: ${status.phase}`}
      </span>
      <span className="conn__main" title={status.disconnectedSince === null ? undefined : `since ${formatUtc(status.disconnectedSince)}`} suppressHydrationWarning>
        <span aria-hidden="true" className="conn__icon">
          {icon}
        </span>{' '}
        {text}
      </span>
      {status.phase === 'reconnecting' || status.phase === 'unavailable' ? (
        <span className="conn__detail">
          {status.error !== null ? <span className="conn__error">{status.error}</span> : null}
          <span>
            last seen <RelativeTime at={status.lastSeenAt} fallback="never" />
          </span>
        </span>
      ) : null}
    </div>
  );
}

const NodeCard = memo(function NodeCard({ card }: { card: OverviewCard }) {
  const summary = card.summary;
  return (
    <li className={`node-card${card.status.phase === 'unavailable' ? ' node-card--down' : ''}`}>
      <header className="node-card__header">
        <h2>
          <Link href={nodeHref(card.name)}>{card.name}</Link>
        </h2>
        <SummaryStatus agent={card.name} status={card.status} />
      </header>
      <p className="muted small">{card.url}</p>
      {summary === null ? (
        <p className="empty">No snapshot yet.</p>
      ) : (
        <>
          <NodeFacts summary={summary} />
          <NodeCounts summary={summary} />
          <ReconstructionLine summary={summary} />
        </>
      )}
    </li>
  );
});

/** Where discovery looks, and its failure (with the variable at fault) while it fails. */
function DiscoveryNotice({ status, poll, count }: { status: DiscoveryStatus; poll: SummaryPoll; count: number }) {
  const where = (
    <>
      namespace <code>{status.namespace}</code>, selector <code>{status.selector}</code>
    </>
  );
  if (status.error !== null) {
    return (
      <div className="blocking" role="alert">
        <p className="blocking__title">Agent discovery is failing</p>
        <p className="error-text">
          <code>{status.error.variable}</code>: {status.error.message}
        </p>
        <p className="muted small">
          Since <RelativeTime at={serverToBrowserTime(poll, status.error.since)} />;{' '}
          {status.listed ? `showing the last known ${count === 1 ? 'agent' : `${count} agents`}` : 'no agent pods listed yet'} ({where}).
        </p>
      </div>
    );
  }
  if (!status.listed) return <p className="empty">Looking for agent pods ({where})…</p>;
  if (count === 0) {
    return (
      <div className="gate">
        <p>No agent pods found.</p>
        <p>
          No Running pod with a pod IP matches {where}. Set <code>VOLUMESCOPE_DISCOVERY_NAMESPACE</code> and{' '}
          <code>VOLUMESCOPE_DISCOVERY_SELECTOR</code> to where the agent DaemonSet runs.
        </p>
      </div>
    );
  }
  return <p className="muted small">Agent pods discovered in {where}.</p>;
}

/**
 * The nodes overview: one card per agent, from one poll of every agent's summary (see
 * lib/dashboard/summary.ts for the interval); no event stream is opened here. With discovery the
 * cards follow the agent pods as they come and go.
 */
export function NodesOverview({ agents, discovery = null }: { agents: readonly OverviewAgent[]; discovery?: DiscoveryStatus | null }) {
  const query = useQuery(summariesQueryOptions());
  const now = useNow(SUMMARY_POLL_INTERVAL_MS);
  const { data, dataUpdatedAt, error, errorUpdatedAt } = query;
  const poll: SummaryPoll = useMemo(() => ({ data, dataUpdatedAt, error, errorUpdatedAt }), [data, dataUpdatedAt, error, errorUpdatedAt]);
  const stale = isPollStale(poll, now);
  const cards = useMemo(() => overviewCards(agents, poll, stale), [agents, poll, stale]);
  const status = data === undefined ? discovery : data.discovery;
  return (
    <>
      {data !== undefined && data.configError !== null ? <p className="error-text">{data.configError}</p> : null}
      {status !== null ? <DiscoveryNotice status={status} poll={poll} count={cards.length} /> : null}
      <ul className="node-cards">
        {cards.map((card) => (
          <NodeCard key={card.name} card={card} />
        ))}
      </ul>
    </>
  );
}
