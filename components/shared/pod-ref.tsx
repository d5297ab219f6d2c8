import { RowLink } from './row-link.tsx';
import { podHref } from '../../lib/dashboard/routes.ts';

/**
 * A link to a pod's page, named `namespace/name` with its UID secondary (muted, after the link);
 * only the UID when no name is known (a pod that is gone and no event named).
 */
/** `name`: the pod's `namespace/name` (`PodNames`), undefined or null when unknown. */
export function PodRefLink({ node, uid, name, tabIndex }: { node: string; uid: string; name: string | null | undefined; tabIndex?: number }) {
  return (
    <span className="pod-ref">
      <RowLink href={podHref(node, uid)} tabIndex={tabIndex} title={`pod uid ${uid}`}>
        {name ?? uid}
      </RowLink>
      {name === undefined || name === null ? null : <span className="pod-ref__uid"> uid {uid}</span>}
    </span>
  );
}

/** Pod links separated by commas; `empty` when there is none. */
export function PodRefList({ node, uids, podNames, empty }: { node: string; uids: readonly string[]; podNames: ReadonlyMap<string, string>; empty: string }) {
  if (uids.length === 0) return <>{empty}</>;
  return (
    <>
      {uids.map((uid, i) => (
        <span key={uid}>
          {i > 0 ? ', ' : ''}
          <PodRefLink node={node} uid={uid} name={podNames.get(uid)} />
        </span>
      ))}
    </>
  );
}
