import Link from 'next/link';
import type { ComponentProps } from 'react';

/**
 * A link to a pod or volume page that is not prefetched. Next prefetches every `<Link>` that
 * comes into view (one shared IntersectionObserver over all of them), and a pod or volume page's
 * layout fetches the node's whole snapshot on the server: on a node with 10,000 rows, the rows
 * and history entries in view made the dashboard fetch and parse megabytes per link, and each
 * row a delta brought into view added another, while the same server process relays the live
 * stream (issue "Performance", requirement 2). The page is fetched when the link is followed.
 */
export function RowLink(props: Omit<ComponentProps<typeof Link>, 'prefetch'>) {
  return <Link {...props} prefetch={false} />;
}
