/**
 * The node Lease (`kube-node-lease/<node>`), the kubelet's cheap heartbeat, as
 * kubernetes/kubernetes staging/src/k8s.io/component-helpers/apimachinery/lease/controller.go@v1.34
 * with the kubelet's parameters (pkg/kubelet/kubelet.go@v1.34: `nodeLeaseDurationSeconds` 40,
 * renew interval 0.25 × duration = 10 s, `setNodeOwnerFunc`):
 * - every renew interval: with a known lease, an update (PUT) of `spec.renewTime` (up to 5
 *   tries, `maxUpdateRetries`); a 409 Conflict or any failure falls back to "ensure";
 * - ensure: GET the lease, create it when absent (404), retried with a delay from 200 ms
 *   doubling up to 7 s until it works or the controller stops;
 * - the lease is `holderIdentity` = node name, `leaseDurationSeconds` 40, and owned by the Node
 *   (an ownerReference with the node's UID, added once the node exists) so it goes with the node.
 */
import { CoordinationV1Api, Observable, V1Lease, V1LeaseSpec, V1MicroTime, V1ObjectMeta, V1OwnerReference, type KubeConfig } from '@kubernetes/client-node';
import { model } from '../../lib/kube-client/model.ts';
import type { Clock, TimerHandle } from '../../lib/clock/clock.ts';
import { makeApiClient } from '../../lib/sources/kube/api-client.ts';
import { apiErrorStatus, describeApiError } from '../../lib/kube-client/api-errors.ts';
import { nextBackoffMs, type Backoff } from '../../lib/kube-client/backoff.ts';
import { RequestDeadlines } from '../../lib/kube-client/request-deadline.ts';
import type { Logger } from '../../lib/volume/logger.ts';

export const nodeLeaseNamespace = 'kube-node-lease';
export const nodeLeaseDurationSeconds = 40;
/** `renewIntervalFraction` 0.25 of the duration. */
export const nodeLeaseRenewIntervalMs = nodeLeaseDurationSeconds * 250;
/** `maxUpdateRetries`. */
const maxUpdateRetries = 5;
/** `maxBackoff` 7 s from 200 ms (`backoffEnsureLease`). */
export const leaseEnsureBackoff: Backoff = { initialMs: 200, maxMs: 7000 };

export interface NodeLeaseOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  /** The node's UID once known (the lease's owner); null while the Node does not exist. */
  nodeUid: () => string | null;
  renewIntervalMs?: number;
  ensureBackoff?: Backoff;
}

export class NodeLeaseController {
  private readonly api: CoordinationV1Api;
  private readonly deadlines: RequestDeadlines;
  private latest: V1Lease | null = null;
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private failures = 0;

  constructor(private readonly o: NodeLeaseOptions) {
    this.api = makeApiClient(o.kubeConfig, CoordinationV1Api);
    this.deadlines = new RequestDeadlines({ clientNode: { Observable }, clock: o.clock, timeoutMs: this.renewIntervalMs() });
  }

  start(): void {
    this.schedule(0);
  }

  /** The lease as last written; null before the first success. */
  lease(): V1Lease | null {
    return this.latest;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    this.deadlines.abortAll();
    await this.running;
  }

  /** One sync (tests call it; the timer calls it every renew interval). */
  sync(): Promise<void> {
    this.running ??= this.doSync().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private renewIntervalMs(): number {
    return this.o.renewIntervalMs ?? nodeLeaseRenewIntervalMs;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.sync().finally(() => {
        this.schedule(this.nextDelayMs);
      });
    }, delayMs);
  }

  /** The renew interval after a success; the ensure backoff after a failure. */
  private nextDelayMs = 0;

  private async doSync(): Promise<void> {
    if (this.latest !== null && (await this.retryUpdate(this.latest))) {
      this.nextDelayMs = this.renewIntervalMs();
      return;
    }
    if (await this.ensure()) {
      this.failures = 0;
      this.nextDelayMs = this.renewIntervalMs();
      return;
    }
    this.failures += 1;
    let delay = 0;
    for (let i = 0; i < this.failures; i++) delay = nextBackoffMs(this.o.ensureBackoff ?? leaseEnsureBackoff, delay);
    this.nextDelayMs = delay;
  }

  /** `retryUpdateLease`: false sends the caller to ensure (conflict, or every try failed). */
  private async retryUpdate(base: V1Lease): Promise<boolean> {
    for (let i = 0; i < maxUpdateRetries && !this.stopped; i++) {
      const body = this.newLease(base);
      try {
        this.latest = await this.deadlines.run(`PUT lease ${this.o.nodeName}`, (options) =>
          this.api.replaceNamespacedLease({ name: this.o.nodeName, namespace: nodeLeaseNamespace, body }, options),
        );
        return true;
      } catch (err) {
        this.o.logger.error(`failed to update lease: ${describeApiError(err).message}`, { node: this.o.nodeName });
        const status = apiErrorStatus(err);
        if (status === 409 || status === 404) return false;
      }
    }
    return false;
  }

  /** `ensureLease`: GET, or create when absent. */
  private async ensure(): Promise<boolean> {
    const name = this.o.nodeName;
    try {
      const current = await this.deadlines.run(`GET lease ${name}`, (options) => this.api.readNamespacedLease({ name, namespace: nodeLeaseNamespace }, options));
      return await this.retryUpdate(current);
    } catch (err) {
      if (apiErrorStatus(err) !== 404) {
        this.o.logger.error(`failed to ensure lease exists, will retry: ${describeApiError(err).message}`, { node: name });
        return false;
      }
    }
    try {
      this.latest = await this.deadlines.run(`POST lease ${name}`, (options) => this.api.createNamespacedLease({ namespace: nodeLeaseNamespace, body: this.newLease(null) }, options));
      return true;
    } catch (err) {
      this.o.logger.error(`failed to create lease, will retry: ${describeApiError(err).message}`, { node: name });
      return false;
    }
  }

  /** `newLease`: the base (or a fresh lease) with this holder, duration, renew time now and the node as owner. */
  private newLease(base: V1Lease | null): V1Lease {
    const name = this.o.nodeName;
    // setNodeOwnerFunc: only when the lease has no owner yet and the node exists.
    const uid = this.o.nodeUid();
    const owners = base?.metadata?.ownerReferences ?? [];
    const ownerReferences = owners.length === 0 && uid !== null ? [model(V1OwnerReference, { apiVersion: 'v1', kind: 'Node', name, uid })] : owners;
    return model(V1Lease, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: model(V1ObjectMeta, {
        name,
        namespace: nodeLeaseNamespace,
        ...(base?.metadata?.resourceVersion === undefined ? {} : { resourceVersion: base.metadata.resourceVersion }),
        ...(base?.metadata?.uid === undefined ? {} : { uid: base.metadata.uid }),
        ...(ownerReferences.length === 0 ? {} : { ownerReferences }),
      }),
      spec: model(V1LeaseSpec, {
        holderIdentity: name,
        leaseDurationSeconds: nodeLeaseDurationSeconds,
        renewTime: new V1MicroTime(this.o.clock.now()),
        ...(base?.spec?.acquireTime === undefined ? {} : { acquireTime: base.spec.acquireTime }),
        ...(base?.spec?.leaseTransitions === undefined ? {} : { leaseTransitions: base.spec.leaseTransitions }),
      }),
    });
  }
}
