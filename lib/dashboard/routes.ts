/**
 * The dashboard's URLs, built in one place. Node, pod and volume are path segments (unique volume
 * names contain `/` and `^`, so the segment is percent-encoded); filters are search params.
 */

/** `/nodes/<node>`. */
export function nodeHref(node: string): string {
  return `/nodes/${encodeURIComponent(node)}`;
}

/** `/nodes/<node>/pods/<uid>`. */
export function podHref(node: string, podUid: string): string {
  return `${nodeHref(node)}/pods/${encodeURIComponent(podUid)}`;
}

/** `/nodes/<node>/volumes/<unique volume name, encoded>`. */
export function volumeHref(node: string, uniqueVolumeName: string): string {
  return `${nodeHref(node)}/volumes/${encodeURIComponent(uniqueVolumeName)}`;
}

/** The embeddable (chrome-less) variant of a node or pod page. */
export function embedHref(node: string, podUid?: string): string {
  return `/embed${podUid === undefined ? nodeHref(node) : podHref(node, podUid)}`;
}

/**
 * A dynamic route segment as text. Next hands some segments over still percent-encoded; a
 * segment that is not valid percent-encoding is returned as it is.
 */
export function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** `/api/agents/<node>/snapshot`: the dashboard's pass-through of an agent's snapshot (lib/dashboard/agent-proxy.ts). */
export function agentSnapshotApiHref(node: string): string {
  return `/api/agents/${encodeURIComponent(node)}/snapshot`;
}
