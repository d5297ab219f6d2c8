'use client';

import { memo, useMemo } from 'react';
import type { Observe } from '../../lib/api/observe.ts';
import { orphanCleanupAvailability } from '../../lib/dashboard/observe-view.ts';
import type { RowCommandsSnapshot } from '../../lib/dashboard/row-commands.ts';
import { useAgentConnection } from '../../lib/dashboard/use-agent.ts';
import { OrphansPanel } from './orphans-panel.tsx';
import { PlanPanel } from './plan-panel.tsx';
import { TruthDiffPanel } from './truth-diff-panel.tsx';

export interface ObservePanelsProps {
  /** The agent's configured name (the `<node>` of the dashboard's URLs). */
  readonly agent: string;
  /** `snapshot.observe`; `undefined` (managed mode) renders nothing. */
  readonly observe: Observe | undefined;
  /** The latest snapshot (`useLatest`), read when a plan row's commands are copied. */
  readonly commandsSnapshot?: () => RowCommandsSnapshot;
}

/**
 * The observe-mode panels of the node page: the kubelet's outstanding work (plan) with its own
 * backoff, the orphaned pod directories with the guarded cleanup, and the node truth diff. Panel
 * ids: `observe-plan`, `observe-orphans`, `observe-truth` (for a table of contents).
 */
export const ObservePanels = memo(function ObservePanels({ agent, observe, commandsSnapshot }: ObservePanelsProps) {
  const { phase } = useAgentConnection(agent);
  const cleanupAllowed = observe?.cleanupAllowed ?? false;
  const cleanupBlocked = observe?.cleanupBlocked ?? null;
  // One object per (flag, block, phase): the orphan cards are memoized on it.
  const availability = useMemo(() => orphanCleanupAvailability({ cleanupAllowed, cleanupBlocked }, phase), [cleanupAllowed, cleanupBlocked, phase]);
  if (observe === undefined) return null;
  return (
    <>
      <PlanPanel node={agent} observe={observe} commandsSnapshot={commandsSnapshot} />
      <OrphansPanel agent={agent} observe={observe} availability={availability} />
      <TruthDiffPanel node={agent} observe={observe} />
    </>
  );
});
