import { HydrationBoundary } from '@tanstack/react-query';
import { NodeView } from '../../../../../components/node/node-view.tsx';
import { decodeSegment, snapshotForPage } from '../../../../../lib/dashboard/server-pages.ts';

interface Props {
  params: Promise<{ node: string }>;
}

export async function generateMetadata({ params }: Props): Promise<{ title: string }> {
  const { node } = await params;
  return { title: decodeSegment(node) };
}

/** The agent was resolved by the [node] layout; this prefetches its snapshot for the live view to resume from. */
export default async function Page({ params }: Props) {
  const agent = decodeSegment((await params).node);
  const page = await snapshotForPage(agent);
  return (
    <HydrationBoundary state={page.dehydrated}>
      <NodeView agent={agent} />
    </HydrationBoundary>
  );
}
