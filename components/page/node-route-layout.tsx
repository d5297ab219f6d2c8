import { notFound } from 'next/navigation';
import { connection } from 'next/server';
import type { ReactNode } from 'react';
import { publicUrlFromEnv } from '../../lib/dashboard/public-url.ts';
import { agentForPage } from '../../lib/dashboard/server-pages.ts';
import { AgentPermissionsProvider } from './agent-permissions.tsx';
import { ConfigErrorPanel } from './page-states.tsx';
import { PublicUrlProvider } from './public-url.tsx';

/**
 * The body of the `[node]` layouts (full pages and embeds). Resolves the node before anything
 * streams, so an unknown node is a real 404 (a check inside a loading boundary could only render
 * the not-found page with status 200), and provides the public base URL for copied links. Both
 * come from the environment at request time, never from the build. Action buttons below learn
 * the user's permissions on the node's agent (AgentPermissionsProvider). A function the layouts return
 * (not a component they render), so `notFound()` is thrown by the layout itself.
 */
export async function nodeRouteLayout({ children, params }: { children: ReactNode; params: Promise<{ node: string }> }): Promise<ReactNode> {
  await connection();
  const { node } = await params;
  const found = agentForPage(node);
  if (found.kind === 'config-error') return <ConfigErrorPanel error={found.error} />;
  if (found.kind === 'unknown') notFound();
  return (
    <PublicUrlProvider setting={publicUrlFromEnv()}>
      <AgentPermissionsProvider agent={node}>{children}</AgentPermissionsProvider>
    </PublicUrlProvider>
  );
}
