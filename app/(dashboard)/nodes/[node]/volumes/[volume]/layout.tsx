import { notFound } from 'next/navigation';
import type { ReactNode } from 'react';
import { volumeKnown } from '../../../../../../lib/dashboard/pipeline.ts';
import { decodeSegment, snapshotForPage } from '../../../../../../lib/dashboard/server-pages.ts';

/** A volume the agent does not know is a 404 (see the pod layout). */
export default async function VolumeLayout({ children, params }: { children: ReactNode; params: Promise<{ node: string; volume: string }> }) {
  const { node, volume } = await params;
  const page = await snapshotForPage(decodeSegment(node));
  if (page.ok && !volumeKnown(page.snapshot, decodeSegment(volume))) notFound();
  return children;
}
