import { HydrationBoundary } from '@tanstack/react-query';
import { VolumeView } from '../../../../../../components/volume/volume-view.tsx';
import { decodeSegment, snapshotForPage } from '../../../../../../lib/dashboard/server-pages.ts';

interface Props {
  params: Promise<{ node: string; volume: string }>;
}

export async function generateMetadata({ params }: Props): Promise<{ title: string }> {
  const { node, volume } = await params;
  return { title: `${decodeSegment(volume)} on ${decodeSegment(node)}` };
}

/** The volume was checked by the [volume] layout (same cached snapshot). */
export default async function Page({ params }: Props) {
  const { node, volume } = await params;
  const agent = decodeSegment(node);
  const page = await snapshotForPage(agent);
  return (
    <HydrationBoundary state={page.dehydrated}>
      <VolumeView agent={agent} volume={decodeSegment(volume)} />
    </HydrationBoundary>
  );
}
