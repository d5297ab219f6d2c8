import { notFound } from 'next/navigation';
import type { ReactNode } from 'react';
import { findPod } from '../../../../../../lib/dashboard/pipeline.ts';
import { decodeSegment, snapshotForPage } from '../../../../../../lib/dashboard/server-pages.ts';

/**
 * A pod the agent does not know is a 404. When the agent cannot be reached the page renders
 * anyway (the live view shows the outage). The snapshot fetched here is reused by the page.
 */
export default async function PodLayout({ children, params }: { children: ReactNode; params: Promise<{ node: string; uid: string }> }) {
  const { node, uid } = await params;
  const page = await snapshotForPage(decodeSegment(node));
  if (page.ok && findPod(page.snapshot, decodeSegment(uid)) === null) notFound();
  return children;
}
