'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { memo, useMemo } from 'react';
import { observeCountsText, observeNodes, staleStamp } from '../../lib/dashboard/blind-view.ts';
import type { DiscoveryStatus } from '../../lib/dashboard/discovery-status.ts';
import { nodeHref } from '../../lib/dashboard/routes.ts';
import {
  SUMMARY_POLL_INTERVAL_MS,
  isPollStale,
  overviewCards,
  serverToBrowserTime,
  summariesQueryOptions,
  type OverviewCard,
  type SummaryPoll,
} from '../../lib/dashboard/summary.ts';
import { useNow } from '../../lib/dashboard/use-agent.ts';
import { ConnectionIndicator } from '../shared/connection-status.tsx';
import { EmptyState } from '../shared/empty-state.tsx';
import { NodeCounts } from '../node/node-counts.tsx';
import { NodeFacts } from '../node/node-facts.tsx';
import { ReconstructionLine } from '../node/reconstruction-line.tsx';
import { StaleMark } from '../shared/stale-frame.tsx';
import { RelativeTime, TimeOfDay, timeOfDay } from '../shared/time-text.tsx';

/** A configured agent as the overview lists it. */
export interface OverviewAgent {
  readonly name: string;
  readonly url: string;
}

/** `observe mode · 2 orphaned pod directories, 1 attachment error` on a card of a node in observe mode. */
function ObserveLine({ summary }: { summary: OverviewCard['summary'] }) {
  if (summary?.mode !== 'observe') return null;
  return (
    <p className="facts observe-line">
      <span className="badge badge--running">observe mode</span>
      <span>{observeCountsText(summary.observe)}</span>
    </p>
  );
}

const NodeCard = memo(function NodeCard({ card }: { card: OverviewCard }) {
  const summary = card.summary;
  // Never green while blind: the last numbers stay, dimmed and stamped with their time.
  const stamp = staleStamp(card.status, timeOfDay);
  return (
    <li className={`node-card${card.status.phase === 'unavailable' ? ' node-card--down' : ''}${stamp.stale ? ' is-stale' : ''}`}>
      <StaleMark stamp={stamp} />
      <header className="node-card__header">
        <h2>
          <Link href={nodeHref(card.name)}>{card.name}</Link>
        </h2>
        {/* The node pages' indicator; the state comes from the overview's poll, not from an event stream. */}
        <ConnectionIndicator agent={card.name} state={card.status} />
      </header>
      <p className="muted small">{card.url}</p>
      {summary === null ? (
        <EmptyState>No snapshot yet.</EmptyState>
      ) : (
        <>
          <NodeFacts summary={summary} />
          <ObserveLine summary={summary} />
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
  if (!status.listed) return <EmptyState>Looking for agent pods ({where})…</EmptyState>;
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
 * Where the counts come from when `VOLUMESCOPE_PROMETHEUS_URL` is set: "source: Prometheus (as of
 * <oldest scrape>)", the nodes Prometheus lacks (asked directly), or why Prometheus failed (then
 * every agent was asked). Nothing without Prometheus: the cards' own status lines say it all.
 */
export function CountsSource({ poll }: { poll: SummaryPoll }) {
  const p = poll.data?.prometheus ?? null;
  if (p === null) return null;
  if (p.error !== null) {
    return (
      <p className="muted small" data-testid="counts-source" data-source="agents">
        source: the agents (Prometheus failed, so every agent was asked: {p.error})
      </p>
    );
  }
  const more = p.fallback.count - p.fallback.names.length;
  return (
    <p className="muted small" data-testid="counts-source" data-source="prometheus">
      source: Prometheus{p.asOf !== null ? <> (as of <TimeOfDay at={serverToBrowserTime(poll, p.asOf)} />)</> : null}, {p.nodes} node{p.nodes === 1 ? '' : 's'}
      {p.fallback.count > 0 ? `; asked directly, as Prometheus lacks them: ${p.fallback.names.join(', ')}${more > 0 ? ` and ${more} more` : ''}` : null}
    </p>
  );
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
  const observing = useMemo(() => observeNodes(cards), [cards]);
  return (
    <>
      {data !== undefined && data.configError !== null ? <p className="error-text">{data.configError}</p> : null}
      {status !== null ? <DiscoveryNotice status={status} poll={poll} count={cards.length} /> : null}
      <ul className="node-cards">
        {cards.map((card) => (
          <NodeCard key={card.name} card={card} />
        ))}
      </ul>
      {/* Below the cards, so neither line pushes them when the first answer arrives. */}
      <CountsSource poll={poll} />
      {observing.length > 0 ? (
        <p className="muted small observe-summary">
          In observe mode (watching a real kubelet, never acting):{' '}
          {observing.map((n, i) => (
            <span key={n.name}>
              {i > 0 ? '; ' : null}
              <Link href={nodeHref(n.name)}>{n.name}</Link> ({observeCountsText(n.counts)})
            </span>
          ))}
        </p>
      ) : null}
    </>
  );
}
