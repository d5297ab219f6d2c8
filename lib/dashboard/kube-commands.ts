/**
 * The kubectl and journalctl commands an operator runs next for what a page shows (a pod, a
 * volume), ready to paste: one command a line, `#` comments saying where to run the node-local
 * ones. Only names the snapshot knows go in: a pod whose name is unknown is looked up by its UID
 * (events carry `involvedObject.uid`). Arguments are shell-quoted. Pure.
 */
import type { DesiredVolumeSpec } from '../api/index.ts';

/** Where the agent DaemonSet runs (deploy/base): its namespace and pod label. */
export const AGENT_NAMESPACE = 'volumescope';
export const AGENT_SELECTOR = 'app.kubernetes.io/name=volumescope-agent';

/** `s` as one shell word: unquoted when it has only safe characters, else in single quotes. */
export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9._/=:@^,+-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const q = shellQuote;

/** The agent's log on `node`, searched for `needle`. */
function agentLogCommand(node: string, needle: string): string {
  return (
    `kubectl -n ${AGENT_NAMESPACE} logs $(kubectl -n ${AGENT_NAMESPACE} get pods -l ${AGENT_SELECTOR} ` +
    `--field-selector spec.nodeName=${q(node)} -o name) | grep -F ${q(needle)}`
  );
}

/** The kubelet's journal on the node (run there), searched for `needle`. */
function journalCommand(node: string, needle: string): string {
  return `journalctl -u kubelet --since '1 hour ago' | grep -F ${q(needle)}   # on node ${node}`;
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
  const slash = podName?.indexOf('/') ?? -1;
  const lines: string[] = [];
  if (podName !== undefined && podName !== null && slash > 0) {
    const ns = podName.slice(0, slash);
    const name = podName.slice(slash + 1);
    lines.push(`kubectl -n ${q(ns)} describe pod ${q(name)}`, `kubectl -n ${q(ns)} get events --field-selector involvedObject.uid=${q(uid)}`);
  } else {
    lines.push(`kubectl get events -A --field-selector involvedObject.uid=${q(uid)}`);
  }
  lines.push(agentLogCommand(node, uid), journalCommand(node, uid));
  return lines.join('\n');
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
  const lines: string[] = [];
  if (spec?.claimName !== undefined && namespace !== undefined && namespace !== null) lines.push(`kubectl -n ${q(namespace)} describe pvc ${q(spec.claimName)}`);
  if (spec?.persistentVolumeName !== undefined) lines.push(`kubectl describe pv ${q(spec.persistentVolumeName)}`);
  if (spec?.volumeAttachment !== undefined) lines.push(`kubectl get volumeattachment ${q(spec.volumeAttachment)} -o yaml`);
  if (uniqueVolumeName.startsWith('kubernetes.io/csi/')) lines.push(`kubectl get csinode ${q(node)} -o yaml`);
  lines.push(agentLogCommand(node, uniqueVolumeName), journalCommand(node, uniqueVolumeName));
  return lines.join('\n');
}
