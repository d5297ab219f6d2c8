import { notFound } from 'next/navigation';
import type { ReactNode } from 'react';
import { ConfigErrorPanel } from '../../../../components/page/page-states.tsx';
import { agentForPage } from '../../../../lib/dashboard/server-pages.ts';

/**
 * Resolves the node before anything streams, so an unknown node is a real 404 (a check inside a
 * loading boundary could only render the not-found page with status 200).
 */
export default async function NodeLayout({ children, params }: { children: ReactNode; params: Promise<{ node: string }> }) {
  const { node } = await params;
  const found = agentForPage(node);
  if (found.kind === 'config-error') return <ConfigErrorPanel error={found.error} />;
  if (found.kind === 'unknown') notFound();
  return children;
}
