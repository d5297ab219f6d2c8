import { NodeView } from '../../../../../components/node/node-view.tsx';
import { nodeFirstScreen } from '../../../../../lib/dashboard/node-first-screen.ts';
import { decodeSegment, snapshotForPage } from '../../../../../lib/dashboard/server-pages.ts';
import { parseVolumeFilters, type SearchParamsLike } from '../../../../../lib/dashboard/volume-filters.ts';

interface Props {
  params: Promise<{ node: string }>;
  searchParams: Promise<SearchParamsLike>;
}

export async function generateMetadata({ params }: Props): Promise<{ title: string }> {
  const { node } = await params;
  return { title: decodeSegment(node) };
}

/**
 * The agent was resolved by the [node] layout. The page is rendered from its first screen (the
 * top and the first rows of the table under the URL's filters), not from the whole snapshot: the
 * snapshot of a large node is megabytes that the page's HTML and payload would carry before the
 * first row shows. The live stream brings the full snapshot to the browser.
 */
export default async function Page({ params, searchParams }: Props) {
  const agent = decodeSegment((await params).node);
  const page = await snapshotForPage(agent);
  const firstScreen = page.ok ? nodeFirstScreen(page.snapshot, parseVolumeFilters(await searchParams)) : null;
  return <NodeView agent={agent} firstScreen={firstScreen} />;
}
