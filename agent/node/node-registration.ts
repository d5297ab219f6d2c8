/**
 * The agent as the node's kubelet towards the API server (`--register-node`): it creates its
 * Node object and builds the node status it reports. The periodic status patch itself is the one
 * of node-status-updater.ts (one patch path: conditions, heartbeats and `volumesInUse` go in the
 * same strategic merge patch of `nodes/<name>/status`); the Lease is node-lease.ts.
 *
 * Registration, as kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go@v1.34
 * `registerWithAPIServer` / `tryRegisterWithAPIServer`:
 * - POST the initial node (`initialNode`: labels, annotations, then the status setters); retried
 *   with a delay from 100 ms doubling to 7 s until it succeeds;
 * - on 409 AlreadyExists: GET the existing node and reconcile what the kubelet reconciles there:
 *   the controller-managed attach/detach annotation (`reconcileCMADAnnotationWithExistingNode`)
 *   and the default labels (`updateDefaultLabels`); a change is sent as a patch of the status
 *   subresource (the kubelet's `PatchNodeStatus`: the nodes/status strategy keeps metadata
 *   changes, and NodeRestriction lets a node change these labels of its own).
 *
 * Status (pkg/kubelet/nodestatus/setters.go@v1.34, in the order of `defaultNodeStatusFuncs`):
 * addresses (InternalIP from `--node-ip`, Hostname), capacity/allocatable (cpu and memory of this
 * machine, pods 110: the kubelet's `--max-pods` default), nodeInfo (`kubeletVersion`
 * `v1.34.4-volumescope.<agent version>`: the upstream release the agent follows plus what it
 * really is; no container runtime: `containerRuntimeVersion` names none), daemonEndpoints (the
 * agent's API port), and the conditions MemoryPressure, DiskPressure, PIDPressure (False) and
 * Ready (True, reason KubeletReady) with the kubelet's reasons and messages. `lastHeartbeatTime`
 * is the time of the report; `lastTransitionTime` stays what the existing node had for the same
 * status, else the time this agent first reported it.
 *
 * Deliberate difference: the kubelet patches its status only when it changed or every
 * `nodeStatusReportFrequency` (5 min), the Lease being the heartbeat; this agent re-sends the
 * status at every `--node-status-update-frequency` (the updater's periodic re-assertion of
 * `volumesInUse`), so `lastHeartbeatTime` advances every 10 s.
 */
import { arch, availableParallelism, hostname as osHostname, platform, release, totalmem } from 'node:os';
import { CoreV1Api, Observable, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import type { Clock } from '../../lib/clock/clock.ts';
import { apiErrorStatus, describeApiError } from '../../lib/kube-client/api-errors.ts';
import type { Backoff } from '../../lib/kube-client/backoff.ts';
import { nextBackoffMs } from '../../lib/kube-client/backoff.ts';
import { RequestDeadlines } from '../../lib/kube-client/request-deadline.ts';
import type { Logger } from '../../lib/volume/logger.ts';

/** `volutil.ControllerManagedAttachAnnotation` (pkg/volume/util/util.go@v1.34). */
export const ControllerManagedAttachAnnotation = 'volumes.kubernetes.io/controller-managed-attach-detach';
/** The kubelet's `--max-pods` default. */
export const defaultMaxPods = 110;
/** `registerWithAPIServer`: 100 ms doubling up to 7 s. */
export const registrationBackoff: Backoff = { initialMs: 100, maxMs: 7000 };
const requestTimeoutMs = 30_000;

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

export interface NodeRegistrationOptions {
  kubeConfig: KubeConfig;
  identity: NodeIdentity;
  status: NodeStatusBuilder;
  clock: Clock;
  logger: Logger;
  backoff?: Backoff;
}

/** `registerWithAPIServer`: resolves once the node exists as this agent wants it; retries until then or {@link stop}. */
export class NodeRegistration {
  private readonly core: CoreV1Api;
  private readonly deadlines: RequestDeadlines;
  private stopped = false;
  private wake: (() => void) | null = null;
  private registeredNode: V1Node | null = null;

  constructor(private readonly o: NodeRegistrationOptions) {
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock: o.clock, timeoutMs: requestTimeoutMs });
  }

  /** The node as the API server returned it after registration; null before. */
  node(): V1Node | null {
    return this.registeredNode;
  }

  /** Registers; resolves true once registered, false when stopped first. */
  async register(): Promise<boolean> {
    let delayMs = 0;
    while (!this.stopped) {
      if (await this.tryRegister()) return true;
      delayMs = nextBackoffMs(this.o.backoff ?? registrationBackoff, delayMs);
      await new Promise<void>((resolve) => {
        const timer = this.o.clock.setTimeout(resolve, delayMs);
        this.wake = () => {
          this.o.clock.clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
    return false;
  }

  stop(): void {
    this.stopped = true;
    this.deadlines.abortAll();
    this.wake?.();
  }

  /** `tryRegisterWithAPIServer`. */
  private async tryRegister(): Promise<boolean> {
    const { identity: id, logger } = this.o;
    const name = id.nodeName;
    try {
      const created = await this.deadlines.run(`POST /api/v1/nodes (${name})`, (options) => this.core.createNode({ body: initialNode(id, this.o.status) }, options));
      logger.info(`Successfully registered node ${name}`, { node: name });
      this.registeredNode = created;
      return true;
    } catch (err) {
      if (apiErrorStatus(err) !== 409) {
        logger.error(`Unable to register node with API server: ${describeApiError(err).message}`, { node: name });
        return false;
      }
    }
    try {
      const existing = await this.deadlines.run(`GET /api/v1/nodes/${name}`, (options) => this.core.readNode({ name }, options));
      this.o.status.adoptExisting(existing);
      const patch = reconcileExistingNode(id, existing);
      if (patch === null) {
        logger.info(`Node was previously registered: ${name}`, { node: name });
        this.registeredNode = existing;
        return true;
      }
      logger.info(`Reconciling the existing node ${name} (controller attach/detach annotation, default labels)`, { node: name, patch });
      this.registeredNode = await this.deadlines.run(`PATCH /api/v1/nodes/${name}/status`, (options) =>
        this.core.patchNodeStatus({ name, body: patch }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch, options)),
      );
      return true;
    } catch (err) {
      logger.error(`Unable to reconcile the existing node ${name} with API server: ${describeApiError(err).message}`, { node: name });
      return false;
    }
  }
}
