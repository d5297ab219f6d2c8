/**
 * What the agent says about its node when it registers as the node's kubelet: its identity
 * (addresses, capacity, nodeInfo), the node status it reports and the initial Node object; the
 * registration itself (API calls, retries) is node-registration.ts. Kept apart from it because it
 * needs no Kubernetes client: a standalone agent builds its node conditions from this alone and
 * never loads @kubernetes/client-node (about 85 MB of RSS).
 */
import { arch, availableParallelism, hostname as osHostname, platform, release, totalmem } from 'node:os';
import type { Clock } from '../../lib/clock/clock.ts';

/** `volutil.ControllerManagedAttachAnnotation` (pkg/volume/util/util.go@v1.34). */
export const ControllerManagedAttachAnnotation = 'volumes.kubernetes.io/controller-managed-attach-detach';
/** The kubelet's `--max-pods` default. */
export const defaultMaxPods = 110;

/** What the node reports about itself; everything the setters need. */
export interface NodeIdentity {
  nodeName: string;
  /** `kubernetes.io/hostname`: the kubelet's hostname override is the node name when given. */
  hostname: string;
  internalIp: string;
  /** `kubernetes.io/os`, `kubernetes.io/arch` in Go's spelling (linux, amd64, arm64). */
  os: string;
  arch: string;
  cpu: number;
  memoryBytes: number;
  maxPods: number;
  kernelVersion: string;
  kubeletVersion: string;
  /** The agent's HTTP port, reported as `daemonEndpoints.kubeletEndpoint.Port`. */
  port: number;
  controllerAttachDetach: boolean;
}

/** Node's `process.arch` in Go's GOARCH spelling. */
export function goArch(nodeArch: string): string {
  switch (nodeArch) {
    case 'x64':
      return 'amd64';
    case 'ia32':
      return '386';
    default:
      return nodeArch;
  }
}

/** The `kubeletVersion` this agent reports: the upstream release it follows, then what it is. */
export function agentKubeletVersion(agentVersion: string): string {
  return `v1.34.4-volumescope.${agentVersion}`;
}

/** This machine's identity for `nodeName` (os, arch, cpu, memory from node:os). */
export function localNodeIdentity(options: { nodeName: string; internalIp: string; agentVersion: string; port: number; controllerAttachDetach: boolean }): NodeIdentity {
  return {
    nodeName: options.nodeName,
    hostname: options.nodeName || osHostname().toLowerCase(),
    internalIp: options.internalIp,
    os: platform(),
    arch: goArch(arch()),
    cpu: availableParallelism(),
    memoryBytes: totalmem(),
    maxPods: defaultMaxPods,
    kernelVersion: release(),
    kubeletVersion: agentKubeletVersion(options.agentVersion),
    port: options.port,
    controllerAttachDetach: options.controllerAttachDetach,
  };
}

/** `initialNode`'s labels: hostname, os and arch, stable and beta (kubeletapis.LabelOS/LabelArch). */
export function defaultNodeLabels(id: NodeIdentity): Record<string, string> {
  return {
    'kubernetes.io/hostname': id.hostname,
    'kubernetes.io/os': id.os,
    'kubernetes.io/arch': id.arch,
    'beta.kubernetes.io/os': id.os,
    'beta.kubernetes.io/arch': id.arch,
  };
}

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

/** The node conditions this agent reports; the kubelet's reasons and messages (setters.go). */
const conditionTemplates: readonly Omit<Condition, 'lastHeartbeatTime' | 'lastTransitionTime'>[] = [
  { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
  { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
  { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
  { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' },
];

/**
 * Builds the node status of each report. It remembers when each condition got its status, so a
 * transition time is not reset by every heartbeat.
 */
export class NodeStatusBuilder {
  private readonly transitions = new Map<string, { status: string; at: string }>();

  constructor(
    private readonly id: NodeIdentity,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /** Takes the transition times of the existing node's conditions that have the status this agent reports. */
  adoptExisting(node: { status?: { conditions?: readonly { type: string; status: string; lastTransitionTime?: Date | string }[] } } | undefined): void {
    for (const c of node?.status?.conditions ?? []) {
      const template = conditionTemplates.find((t) => t.type === c.type);
      const at = c.lastTransitionTime instanceof Date ? c.lastTransitionTime.toISOString() : c.lastTransitionTime;
      if (template !== undefined && template.status === c.status && at !== undefined && !this.transitions.has(c.type)) this.transitions.set(c.type, { status: c.status, at: rfc3339(at) });
    }
  }

  /**
   * The `status` of the patch; `volumesInUse` only when given (null: the volume manager has not
   * synced, and as the kubelet's VolumesInUse setter the field is left as it is).
   */
  status(volumesInUse: readonly string[] | null): Record<string, unknown> {
    const now = rfc3339(new Date(this.clock.now()).toISOString());
    const conditions: Condition[] = conditionTemplates.map((t) => {
      let transition = this.transitions.get(t.type);
      if (transition?.status !== t.status) {
        transition = { status: t.status, at: now };
        this.transitions.set(t.type, transition);
      }
      return { ...t, lastHeartbeatTime: now, lastTransitionTime: transition.at };
    });
    const resources = { cpu: String(this.id.cpu), memory: `${String(Math.floor(this.id.memoryBytes / 1024))}Ki`, pods: String(this.id.maxPods) };
    return {
      addresses: [
        { type: 'InternalIP', address: this.id.internalIp },
        { type: 'Hostname', address: this.id.hostname },
      ],
      capacity: resources,
      allocatable: resources,
      nodeInfo: {
        machineID: '',
        systemUUID: '',
        bootID: '',
        kernelVersion: this.id.kernelVersion,
        osImage: 'VolumeScope agent (no container runtime)',
        containerRuntimeVersion: 'none://',
        kubeletVersion: this.id.kubeletVersion,
        operatingSystem: this.id.os,
        architecture: this.id.arch,
      },
      daemonEndpoints: { kubeletEndpoint: { Port: this.id.port } },
      conditions,
      ...(volumesInUse === null ? {} : { volumesInUse: [...volumesInUse] }),
    };
  }
}

/** Kubernetes `metav1.Time` has second precision: `2026-01-01T00:00:00Z`. */
function rfc3339(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}

/** `initialNode`: the Node to create, with the first status (client-node's model names are the JSON names here). */
export function initialNode(id: NodeIdentity, status: NodeStatusBuilder): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: id.nodeName,
      labels: defaultNodeLabels(id),
      annotations: id.controllerAttachDetach ? { [ControllerManagedAttachAnnotation]: 'true' } : {},
    },
    spec: {},
    status: status.status(null),
  };
}

/**
 * `reconcileCMADAnnotationWithExistingNode` and `updateDefaultLabels` on an existing node: the
 * metadata patch that makes it match, or null when nothing differs.
 */
export function reconcileExistingNode(id: NodeIdentity, existing: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } }): { metadata: { labels?: Record<string, string>; annotations?: Record<string, string | null> } } | null {
  const annotations: Record<string, string | null> = {};
  const existingCMAD = existing.metadata?.annotations?.[ControllerManagedAttachAnnotation];
  if (id.controllerAttachDetach && existingCMAD !== 'true') annotations[ControllerManagedAttachAnnotation] = 'true';
  if (!id.controllerAttachDetach && existingCMAD !== undefined) annotations[ControllerManagedAttachAnnotation] = null;
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(defaultNodeLabels(id))) {
    if (existing.metadata?.labels?.[key] !== value) labels[key] = value;
  }
  if (Object.keys(annotations).length === 0 && Object.keys(labels).length === 0) return null;
  return {
    metadata: {
      ...(Object.keys(labels).length === 0 ? {} : { labels }),
      ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
    },
  };
}
