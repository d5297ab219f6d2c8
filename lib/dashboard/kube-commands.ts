/**
 * The kubectl and journalctl commands an operator runs next for what a page shows (a pod, a
 * volume) and for one row in view (a pod's volume, a pending operation), ready to paste: one
 * command a line, `#` comments saying where to run the node-local ones. Only names the snapshot
 * knows go in: a pod whose name is unknown is looked up by its UID (events carry
 * `involvedObject.uid`). Arguments are shell-quoted. Pure.
 *
 * The logs of a row are the volume manager's: the agent's in managed mode (it is the node's
 * volume manager), the kubelet's journal in observe mode (the kubelet does the work), both from
 * a minute before the row's trouble started when that time is known.
 */
import type { DesiredVolumeSpec, Operation } from '../api/index.ts';
import { retryTargetText } from './retry-follow-up.ts';

/** Where the agent DaemonSet runs (deploy/base): its namespace and pod label. */
export const AGENT_NAMESPACE = 'volumescope';
export const AGENT_SELECTOR = 'app.kubernetes.io/name=volumescope-agent';

/** `s` as one shell word: unquoted when it has only safe characters, else in single quotes. */
export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9._/=:@^,+-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const q = shellQuote;

/** How far back a row's logs start before its trouble did. */
const LOG_LEAD_MS = 60_000;

/** `2026-12-02 05:40:00 UTC` (journalctl reads it), `2026-12-02T05:40:00Z` (kubectl's --since-time). */
function logStart(since: number): { journal: string; rfc3339: string } {
  const iso = new Date(Math.max(0, since - LOG_LEAD_MS)).toISOString().slice(0, 19);
  return { journal: `${iso.replace('T', ' ')} UTC`, rfc3339: `${iso}Z` };
}

/** The agent's log on `node`, searched for `needle`; from `since` (epoch ms) when given. */
function agentLogCommand(node: string, needle: string, since: number | null = null): string {
  const from = since === null ? '' : ` --since-time=${logStart(since).rfc3339}`;
  return (
    `kubectl -n ${AGENT_NAMESPACE} logs${from} $(kubectl -n ${AGENT_NAMESPACE} get pods -l ${AGENT_SELECTOR} ` +
    `--field-selector spec.nodeName=${q(node)} -o name) | grep -F ${q(needle)}`
  );
}

/** The kubelet's journal on the node (run there), searched for `needle`; from `since` (epoch ms) when given, else the last hour. */
function journalCommand(node: string, needle: string, since: number | null = null): string {
  const from = since === null ? `'1 hour ago'` : q(logStart(since).journal);
  return `journalctl -u kubelet --since ${from} | grep -F ${q(needle)}   # on node ${node}`;
}

/** `namespace` and `name` of a `namespace/name`; null when it is not one. */
function splitPodName(podName: string | null | undefined): { ns: string; name: string } | null {
  const slash = podName?.indexOf('/') ?? -1;
  if (podName === undefined || podName === null || slash <= 0) return null;
  return { ns: podName.slice(0, slash), name: podName.slice(slash + 1) };
}

/** A pod as far as the snapshot names it. */
export interface PodCommandTarget {
  readonly node: string;
  readonly uid: string;
  /** `namespace/name`; null or undefined when unknown (a pod that is gone and no event named). */
  readonly podName?: string | null;
}

/** The commands for a pod: describe it, its events (by UID, so also when it is gone), the agent's and the kubelet's logs about it. */
export function podCommands({ node, uid, podName }: PodCommandTarget): string {
  return [...podLookupCommands(uid, podName), agentLogCommand(node, uid), journalCommand(node, uid)].join('\n');
}

/** `kubectl describe pod` and its events by UID for a named pod; its events in every namespace for one without a name. */
function podLookupCommands(uid: string, podName: string | null | undefined): string[] {
  const pod = splitPodName(podName);
  if (pod === null) return [`kubectl get events -A --field-selector involvedObject.uid=${q(uid)}`];
  return [`kubectl -n ${q(pod.ns)} describe pod ${q(pod.name)}`, `kubectl -n ${q(pod.ns)} get events --field-selector involvedObject.uid=${q(uid)}`];
}

/** A volume as far as the snapshot tells: its unique name and, from a desired pod, its spec. */
export interface VolumeCommandTarget {
  readonly node: string;
  readonly uniqueVolumeName: string;
  /** The namespace of a pod that uses it (the claim's namespace). */
  readonly namespace?: string | null;
  readonly spec?: DesiredVolumeSpec | null;
}

/** The commands for a volume: its claim, PV and VolumeAttachment when known, the node's CSINode (attach limits), the logs about it. */
export function volumeCommands({ node, uniqueVolumeName, namespace, spec }: VolumeCommandTarget): string {
  return [...volumeObjectCommands(node, uniqueVolumeName, namespace, spec), agentLogCommand(node, uniqueVolumeName), journalCommand(node, uniqueVolumeName)].join('\n');
}

/** The claim, PV, VolumeAttachment and CSINode of a volume, as far as its spec names them. */
function volumeObjectCommands(node: string, uniqueVolumeName: string, namespace: string | null | undefined, spec: DesiredVolumeSpec | null | undefined): string[] {
  const lines: string[] = [];
  if (spec?.claimName !== undefined && namespace !== undefined && namespace !== null) lines.push(`kubectl -n ${q(namespace)} describe pvc ${q(spec.claimName)}`);
  if (spec?.persistentVolumeName !== undefined) lines.push(`kubectl describe pv ${q(spec.persistentVolumeName)}`);
  if (spec?.volumeAttachment !== undefined) lines.push(`kubectl get volumeattachment ${q(spec.volumeAttachment)} -o yaml`);
  if (uniqueVolumeName.startsWith('kubernetes.io/csi/')) lines.push(`kubectl get csinode ${q(node)} -o yaml`);
  return lines;
}

/** The volume manager's log about a row: the agent's (managed mode) or the kubelet's journal (observe mode). */
function rowLogCommand(node: string, needle: string, observed: boolean, since: number | null): string {
  return observed ? journalCommand(node, needle, since) : agentLogCommand(node, needle, since);
}

/** One pod's volume (a row of the pods table, a card of the pod page). */
export interface VolumeRowCommandTarget {
  readonly node: string;
  readonly podUid: string;
  /** `namespace/name`; null when unknown. */
  readonly podName: string | null;
  /** The pod's name for the volume. */
  readonly volumeName: string;
  readonly uniqueVolumeName: string;
  /** The desired volume's spec (claim, PV, VolumeAttachment); null when not desired or unknown. */
  readonly spec: DesiredVolumeSpec | null;
  /** Observe mode: the kubelet does the work, its journal has the log. */
  readonly observed: boolean;
  /** When the row's trouble started (its first failure, its operation's last error); null when unknown. */
  readonly since: number | null;
}

/** The row's accessible target: `volume logs of pod e2e/stuck-0`. */
export function volumeRowTargetText(t: Pick<VolumeRowCommandTarget, 'volumeName' | 'podName' | 'podUid'>): string {
  return `volume ${t.volumeName} of pod ${t.podName ?? `uid ${t.podUid}`}`;
}

/** The commands for one pod's volume: the pod, the volume's API objects, the volume manager's log about it. */
export function volumeRowCommands(t: VolumeRowCommandTarget): string {
  const pod = splitPodName(t.podName);
  return [
    ...podLookupCommands(t.podUid, t.podName),
    ...volumeObjectCommands(t.node, t.uniqueVolumeName, pod?.ns ?? null, t.spec),
    rowLogCommand(t.node, t.uniqueVolumeName, t.observed, t.since),
  ].join('\n');
}

/** One pending operation (a row of the operations table or of the kubelet's plan). */
export interface OperationRowCommandTarget {
  readonly node: string;
  readonly op: Pick<Operation, 'operationName' | 'volume' | 'podUid'>;
  /** `namespace/name` of the operation's pod; null when unknown or volume-wide. */
  readonly podName: string | null;
  /** The volume's spec from a desired pod that uses it; null when none. */
  readonly spec: DesiredVolumeSpec | null;
  readonly observed: boolean;
  /** When the operation first failed; null when unknown. */
  readonly since: number | null;
}

/** The row's accessible target: `mount volume pgdata for pod default/db-0` (as Retry now names it). */
export function operationRowTargetText(t: Pick<OperationRowCommandTarget, 'op' | 'podName'>): string {
  return retryTargetText(t.op, { podName: t.podName });
}

/** The commands for one pending operation: its pod (when it has one), its volume's API objects, the volume manager's log about the volume. */
export function operationRowCommands(t: OperationRowCommandTarget): string {
  const pod = splitPodName(t.podName);
  return [
    ...(t.op.podUid === null ? [] : podLookupCommands(t.op.podUid, t.podName)),
    ...volumeObjectCommands(t.node, t.op.volume, pod?.ns ?? null, t.spec),
    rowLogCommand(t.node, t.op.volume, t.observed, t.since),
  ].join('\n');
}
