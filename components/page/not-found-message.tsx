'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { decodeSegment, nodeHref } from '../../lib/dashboard/routes.ts';

/** What a not-found page is about, from the URL: `/[embed/]nodes/<node>[/pods/<uid>|/volumes/<volume>]`. */
export function describeNotFound(pathname: string, level: 'node' | 'item'): { title: string; text: string; node: string | null } {
  const parts = pathname.replace(/^\/embed/, '').split('/').filter((p) => p !== '').map(decodeSegment);
  const [first, node, kind, item] = parts;
  if (first !== 'nodes' || node === undefined) return { title: 'Page not found', text: 'There is no page at this address.', node: null };
  if (level === 'node' || item === undefined) {
    return { title: 'Node not found', text: `No agent named “${node}” is configured on this dashboard.`, node: null };
  }
  if (kind === 'pods') {
    return {
      title: 'Pod not found',
      text: `The agent of ${node} does not know a pod with UID “${item}”: it is not in the desired world and has no mounts, operations, errors or reconstruction entries (it may have been deleted and cleaned up).`,
      node,
    };
  }
  return {
    title: 'Volume not found',
    text: `The agent of ${node} does not know the volume “${item}”: no pod wants it, it is not attached or mounted, and no operation works on it.`,
    node,
  };
}

/** The body of the not-found pages. */
export function NotFoundMessage({ level }: { level: 'node' | 'item' }) {
  const { title, text, node } = describeNotFound(usePathname(), level);
  return (
    <div className="gate" role="status">
      <h1>{title}</h1>
      <p>{text}</p>
      <p className="toolbar">
        {node !== null ? <Link href={nodeHref(node)}>Back to node {node}</Link> : null}
        <Link href="/">All nodes</Link>
      </p>
    </div>
  );
}
