/**
 * The guided non-graceful node shutdown: marking a node `node.kubernetes.io/out-of-service`
 * (NoExecute, value `nodeshutdown`) so that its pods are force-deleted and the attach/detach
 * controller detaches their volumes without waiting for an unmount. Safe only when the node is
 * really off: a node that still runs keeps writing to volumes that are then attached elsewhere.
 *
 * The checks (docs/safety.md, "Marking a node out of service"), all evaluated by the server on a
 * live read of the Node right before the write: the Node exists; it is not Ready (a Ready node is
 * refused with 409 `node-ready`, whatever the browser sent); it is not marked already; the
 * operator attested that the node is powered off, under their login ({@link currentOperator}); the
 * Node has not changed since that read (the JSON patch tests its resourceVersion). The patch adds
 * the taint and records who attested and when in two annotations on the Node.
 *
 * Pure planning here; the API calls are in out-of-service-routes.ts.
 */
import { OUT_OF_SERVICE_TAINT_VALUE, TaintNodeOutOfService } from './adc-constants.ts';
import type { NodeObject, PodObject } from './objects.ts';
import { isPodTerminated } from './model.ts';

/** Who attested, and when (annotations on the Node, next to the taint). */
export const ATTESTED_BY_ANNOTATION = 'volumescope.dev/out-of-service-attested-by';
export const ATTESTED_AT_ANNOTATION = 'volumescope.dev/out-of-service-attested-at';

export type OutOfServiceRefusalReason = 'node-not-found' | 'node-ready' | 'already-out-of-service' | 'not-attested' | 'no-operator';

export interface OutOfServiceRefusal {
  readonly status: 400 | 401 | 404 | 409;
  readonly reason: OutOfServiceRefusalReason;
  readonly message: string;
}

/** A pod the taint makes the cluster delete (by force, once the node is out of service). */
export interface ForceDeletedPod {
  readonly namespace: string;
  readonly name: string;
  readonly phase: string;
  /** Names of its persistentVolumeClaim volumes. */
  readonly claims: readonly string[];
}

export interface OutOfServicePlan {
  readonly node: string;
  readonly exists: boolean;
  readonly ready: string | null;
  readonly outOfService: boolean;
  readonly attestedBy: string | null;
  readonly attestedAt: string | null;
  /** Pods on the node that do not tolerate the taint and are not terminated. */
  readonly podsToForceDelete: readonly ForceDeletedPod[];
  /** Unique volume names in the node's status.volumesAttached (detached without an unmount wait). */
  readonly volumesAttached: readonly string[];
  /** Why applying it now would be refused (before the attestation), or `null`. */
  readonly refusal: OutOfServiceRefusal | null;
}

/** The answer of every method of the out-of-service route: the plan as it stands after the request. */
export interface OutOfServiceResponse {
  readonly plan: OutOfServicePlan;
  /** Set by a successful POST. */
  readonly appliedBy?: { readonly name: string; readonly source: 'session' };
}

/** Whether a pod tolerates `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`. */
export function toleratesOutOfService(pod: PodObject): boolean {
  return (pod.spec?.tolerations ?? []).some((t) => {
    if (t.effect !== undefined && t.effect !== '' && t.effect !== 'NoExecute') return false;
    if ((t.key ?? '') === '') return t.operator === 'Exists';
    if (t.key !== TaintNodeOutOfService) return false;
    return t.operator === 'Exists' || (t.value ?? '') === OUT_OF_SERVICE_TAINT_VALUE;
  });
}

export function planOutOfService(nodeName: string, node: NodeObject | undefined, pods: readonly PodObject[]): OutOfServicePlan {
  const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? null;
  const tainted = node?.spec?.taints?.some((t) => t.key === TaintNodeOutOfService) === true;
  const podsToForceDelete = pods
    .filter((p) => p.spec?.nodeName === nodeName && !isPodTerminated(p) && !toleratesOutOfService(p))
    .map((p) => ({
      namespace: p.metadata?.namespace ?? '',
      name: p.metadata?.name ?? '',
      phase: p.status?.phase ?? '',
      claims: (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim?.claimName === undefined ? [] : [v.persistentVolumeClaim.claimName])),
    }))
    .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
  let refusal: OutOfServiceRefusal | null = null;
  if (node === undefined) refusal = { status: 404, reason: 'node-not-found', message: `there is no Node ${nodeName}` };
  else if (ready === 'True') {
    refusal = { status: 409, reason: 'node-ready', message: `${nodeName} is Ready: its kubelet reports in, so it is running; a running node must not be marked out of service` };
  } else if (tainted) refusal = { status: 409, reason: 'already-out-of-service', message: `${nodeName} already has the ${TaintNodeOutOfService} taint` };
  return {
    node: nodeName,
    exists: node !== undefined,
    ready,
    outOfService: tainted,
    attestedBy: node?.metadata?.annotations?.[ATTESTED_BY_ANNOTATION] ?? null,
    attestedAt: node?.metadata?.annotations?.[ATTESTED_AT_ANNOTATION] ?? null,
    podsToForceDelete,
    volumesAttached: (node?.status?.volumesAttached ?? []).map((v) => v.name ?? '').filter((n) => n !== ''),
    refusal,
  };
}

/** A JSON Pointer token (`/` and `~` escaped). */
const pointer = (token: string): string => token.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The JSON patch that marks `node` out of service: a test of its resourceVersion (the read the
 * checks ran on), the taint appended, the attestation annotations set.
 */
export function outOfServicePatch(node: NodeObject, operator: string, atIso: string): object[] {
  const ops: object[] = [{ op: 'test', path: '/metadata/resourceVersion', value: node.metadata?.resourceVersion ?? '' }];
  const taint = { key: TaintNodeOutOfService, value: OUT_OF_SERVICE_TAINT_VALUE, effect: 'NoExecute', timeAdded: atIso };
  ops.push(node.spec?.taints === undefined ? { op: 'add', path: '/spec/taints', value: [taint] } : { op: 'add', path: '/spec/taints/-', value: taint });
  if (node.metadata?.annotations === undefined) ops.push({ op: 'add', path: '/metadata/annotations', value: {} });
  ops.push({ op: 'add', path: `/metadata/annotations/${pointer(ATTESTED_BY_ANNOTATION)}`, value: operator });
  ops.push({ op: 'add', path: `/metadata/annotations/${pointer(ATTESTED_AT_ANNOTATION)}`, value: atIso });
  return ops;
}

/** The JSON patch that removes the taint (tested by index and key, so a concurrent change fails it). */
export function removeOutOfServicePatch(node: NodeObject): object[] | null {
  const index = node.spec?.taints?.findIndex((t) => t.key === TaintNodeOutOfService) ?? -1;
  if (index < 0) return null;
  return [
    { op: 'test', path: `/spec/taints/${index}/key`, value: TaintNodeOutOfService },
    { op: 'remove', path: `/spec/taints/${index}` },
  ];
}
