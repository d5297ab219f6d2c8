import Link from 'next/link';
import { nodeHref } from '../../lib/dashboard/routes.ts';

/** Shown when the live snapshot no longer mentions the pod. */
export function PodGone({ agent, uid }: { agent: string; uid: string }) {
  return (
    <div className="gate" role="status">
      <h1>Pod not known</h1>
      <p>
        Agent {agent} does not know a pod with UID <code>{uid}</code> (any more): it is not in the desired world, has no mounts,
        operations, errors or reconstruction entries.
      </p>
      <p>
        <Link href={nodeHref(agent)}>Back to node {agent}</Link>
      </p>
    </div>
  );
}
