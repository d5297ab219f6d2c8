'use client';

import { useQuery } from '@tanstack/react-query';
import { createContext, useContext, type ReactNode } from 'react';
import { fetchAgentPermissions, type AgentPermissions } from '../../lib/dashboard/auth/permissions-client.ts';

const PermissionsContext = createContext<AgentPermissions | null>(null);

/** Asks once per minute what the user may do with `agent`; action buttons below read it. */
export function AgentPermissionsProvider({ agent, children }: { agent: string; children: ReactNode }) {
  const { data } = useQuery({
    queryKey: ['agent-permissions', agent],
    queryFn: ({ signal }) => fetchAgentPermissions(agent, (input, init) => fetch(input, init), signal),
    staleTime: 60_000,
    refetchInterval: 60_000,
    retry: false,
  });
  return (
    <PermissionsContext.Provider value={data ?? null}>
      {data !== undefined && !data.update ? (
        <p className="notice" role="note">
          Read-only for {data.user}: {data.reason ?? 'actions on this node are not allowed'}
        </p>
      ) : null}
      {children}
    </PermissionsContext.Provider>
  );
}

/** The user's permissions on the page's agent; `null` when unknown (the agent decides). */
export function useAgentPermissions(): AgentPermissions | null {
  return useContext(PermissionsContext);
}
