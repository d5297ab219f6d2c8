import Link from 'next/link';
import { podCommands } from '../../lib/dashboard/kube-commands.ts';
import { nodeHref } from '../../lib/dashboard/routes.ts';
import { CopyButton } from '../shared/copy-button.tsx';

/**
 * Shown when the live snapshot no longer mentions the pod: named `namespace/name` when its events
 * still name it, with the commands to look for it in the cluster and the logs.
 */
export function PodGone({ agent, uid, podName = null }: { agent: string; uid: string; podName?: string | null }) {
  return (
    <div className="gate" role="status">
      <h1>{podName === null ? 'Pod not known' : `Pod ${podName} is gone`}</h1>
      <p>
        Agent {agent} does not know a pod with UID <code>{uid}</code>
        {podName === null ? '' : ` (${podName}, named by its events)`} (any more): it is not in the desired world, has no mounts,
        operations, errors or reconstruction entries.
      </p>
      <p className="toolbar">
        <CopyButton
          label="Copy kubectl commands"
          accessibleName={`Copy kubectl commands for pod ${podName ?? `uid ${uid}`}`}
          getText={() => podCommands({ node: agent, uid, podName })}
        />
      </p>
      <p>
        <Link href={nodeHref(agent)}>Back to node {agent}</Link>
      </p>
    </div>
  );
}
