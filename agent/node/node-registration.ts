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
import { CoreV1Api, Observable, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import type { Clock } from '../../lib/clock/clock.ts';
import { makeApiClient } from '../../lib/sources/kube/api-client.ts';
import { apiErrorStatus, describeApiError } from '../../lib/kube-client/api-errors.ts';
import type { Backoff } from '../../lib/kube-client/backoff.ts';
import { nextBackoffMs } from '../../lib/kube-client/backoff.ts';
import { RequestDeadlines } from '../../lib/kube-client/request-deadline.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import { initialNode, reconcileExistingNode, type NodeIdentity, type NodeStatusBuilder } from './node-identity.ts';

export { ControllerManagedAttachAnnotation, defaultMaxPods, goArch, agentKubeletVersion, localNodeIdentity, defaultNodeLabels, NodeStatusBuilder, initialNode, reconcileExistingNode, type NodeIdentity } from './node-identity.ts';

/** `registerWithAPIServer`: 100 ms doubling up to 7 s. */
export const registrationBackoff: Backoff = { initialMs: 100, maxMs: 7000 };

const requestTimeoutMs = 30_000;

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
    this.core = makeApiClient(o.kubeConfig, CoreV1Api);
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
