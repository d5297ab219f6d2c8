import { HydrationBoundary } from '@tanstack/react-query';
import { EmbedPod } from '../../../../../../components/embed/embed-views.tsx';
import { decodeSegment, snapshotForPage } from '../../../../../../lib/dashboard/server-pages.ts';

interface Props {
  params: Promise<{ node: string; uid: string }>;
}

export async function generateMetadata({ params }: Props): Promise<{ title: string }> {
  const { node, uid } = await params;
  return { title: `pod ${decodeSegment(uid)} on ${decodeSegment(node)}` };
}

/** The pod was checked by the [uid] layout (same cached snapshot). */
export default async function Page({ params }: Props) {
  const { node, uid } = await params;
  const agent = decodeSegment(node);
  const page = await snapshotForPage(agent);
  return (
    <HydrationBoundary state={page.dehydrated}>
      <EmbedPod agent={agent} uid={decodeSegment(uid)} />
    </HydrationBoundary>
  );
}
