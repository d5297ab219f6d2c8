/**
 * The blocked-attachment explainer: from the attachment model (model.ts), every attachment that
 * is blocked or suspect, in plain words, with the evidence, what the attach/detach controller
 * (ADC) will do next and when, the safe next step, and the checks that must hold before it.
 * Pure; the texts of the ADC (event messages) are verbatim, everything else is this project's.
 *
 * The ADC's detach rule (kubernetes/kubernetes pkg/controller/volume/attachdetach/reconciler/
 * reconciler.go@v1.34): a volume attached to a node where no pod needs it any more is detached
 * - at once when the node does not report it in `status.volumesInUse`;
 * - at once, skipping the unmount check, when the node has the `node.kubernetes.io/out-of-service`
 *   taint;
 * - else only when `maxWaitForUnmountDuration` (6 min) has passed since the ADC started waiting
 *   AND the node is not Ready (`forceDetach := !isHealthy && forceDetachTimeoutExpired`; a node
 *   the ADC cannot find counts as not healthy). A Ready node that keeps reporting the volume in
 *   use keeps it attached for ever. `--disable-force-detach-on-timeout` turns the timed force
 *   detach off entirely (the dashboard cannot see the flag; the text says so).
 * A volume that allows one node only (ReadWriteOnce/ReadWriteOncePod) is not attached to a second
 * node while the ADC counts it attached to the first: the pods there get the Multi-Attach event.
 */
import { maxWaitForUnmountDurationMs, multiAttachErrorMessage, multiAttachUsedByMessage, OUT_OF_SERVICE_TAINT_VALUE, TaintNodeOutOfService } from './adc-constants.ts';
import type { AttachmentModel, NodeFacts, PodRef, VolumeAttachmentState, VolumeOnNode } from './model.ts';
import { formatDuration } from '../time-format.ts';

export type VerdictKind =
  | 'multi-attach'
  | 'attach-error'
  | 'detach-error'
  | 'node-gone'
  | 'waiting-for-unmount'
  | 'detach-pending'
  | 'detaching-stuck'
  | 'attaching'
  | 'not-controller-managed'
  | 'status-without-attachment'
  | 'out-of-service';

/** `blocked`: a pod cannot start or a detach cannot finish; `suspect`: it may resolve by itself, or a sign of a problem; `info`: context. */
export type Severity = 'blocked' | 'suspect' | 'info';

export interface Evidence {
  readonly label: string;
  readonly value: string;
}

/** When the ADC's timed force detach becomes possible for a volume on a node, and whether it applies. */
export interface ForceDetachTimer {
  readonly node: string;
  /** When the ADC started waiting to detach (as observed; see `lowerBound`). */
  readonly detachRequestedAtMs: number;
  /** The wait began before the dashboard first saw it: the real start is earlier. */
  readonly lowerBound: boolean;
  /** detachRequestedAt + maxWaitForUnmountDuration. */
  readonly forceDetachPossibleAtMs: number;
  /** The node is not Ready (or gone): the ADC force-detaches once the time is reached. */
  readonly nodeQualifies: boolean;
  /** The out-of-service taint is set: the ADC detaches without waiting. */
  readonly outOfService: boolean;
  /** The node still reports the volume in use (the ADC waits for the unmount). */
  readonly mountedByNode: boolean;
  /** One line: what happens when. */
  readonly text: string;
}

export interface Verdict {
  readonly kind: VerdictKind;
  readonly severity: Severity;
  /** The node the verdict is about (for Multi-Attach: the node that waits for the volume). */
  readonly node: string;
  readonly title: string;
  /** Plain sentences, in reading order. */
  readonly explanation: readonly string[];
  readonly evidence: readonly Evidence[];
  /** The ADC's event message for this situation, verbatim, when it emits one. */
  readonly expectedEvent: string | null;
  readonly timer: ForceDetachTimer | null;
  readonly nextStep: string;
  /** What must be true before the next step is taken. */
  readonly checks: readonly string[];
}

export interface VolumeExplanation {
  readonly pv: string;
  readonly claim: string | null;
  readonly driver: string;
  readonly severity: Severity | 'ok';
  readonly verdicts: readonly Verdict[];
}

/** A VolumeAttachment that is not attached after this long without an error is called slow. */
export const ATTACH_SLOW_MS = 2 * 60_000;
/** A VolumeAttachment being deleted this long (its finalizer still there) is called stuck. */
export const DETACH_SLOW_MS = 2 * 60_000;

// CHECKS (the project's safety rules for the actions an operator may take; docs/safety.md)

const CHECK_NODE_OFF =
  'The node is confirmed powered off or cut off from its storage by a means outside Kubernetes (the machine console, the cloud API, the storage array): NotReady only means its kubelet stopped reporting.';
const CHECK_NODE_NOT_READY = 'The node is NotReady now (re-read it right before acting, not from this page).';
const CHECK_NO_WRITER = 'No process on the old node can still write to the volume: a second writer corrupts a ReadWriteOnce filesystem.';
const CHECK_TAINT_REMOVED = 'Remove the taint once the node is back and its old pods are gone, or new pods will not be scheduled to it and its volumes keep being force-detached.';
const CHECK_POD_REPLACEABLE = 'The pod to stop is the older copy, and its workload tolerates losing it (a StatefulSet replica, a single-replica Deployment).';
const CHECK_DONT_DELETE_VA =
  'Do not delete the VolumeAttachment or remove its finalizer: the ADC recreates it while a pod needs the volume, and without the finalizer the disk can stay attached on the storage side while Kubernetes thinks it is free.';
const CHECK_BACKEND = "Look at the driver's controller (external-attacher and CSI controller logs) and the storage backend: the error text is the driver's.";

function podName(p: PodRef): string {
  return `${p.namespace}/${p.name}`;
}

function nodeStateText(n: NodeFacts | undefined, nowMs: number): string {
  if (n === undefined || !n.exists) return 'the Node object does not exist';
  const ready = n.ready === null ? 'no Ready condition' : `Ready=${n.ready}${n.readyReason === null ? '' : ` (${n.readyReason})`}`;
  const since = n.readySinceMs === null ? '' : ` for ${formatDuration(nowMs - n.readySinceMs)}`;
  return `${ready}${since}`;
}

function leaseText(n: NodeFacts | undefined, nowMs: number): string {
  if (n?.leaseRenewedMs === null || n?.leaseRenewedMs === undefined) return 'no node Lease';
  return `renewed ${formatDuration(nowMs - n.leaseRenewedMs)} ago`;
}

function nodeEvidence(prefix: string, n: NodeFacts | undefined, nowMs: number): Evidence[] {
  const ev: Evidence[] = [
    { label: `${prefix} state`, value: nodeStateText(n, nowMs) },
    { label: `${prefix} Lease (kube-node-lease)`, value: leaseText(n, nowMs) },
  ];
  if (n?.outOfService !== null && n?.outOfService !== undefined) {
    ev.push({ label: `${prefix} taint`, value: `${TaintNodeOutOfService}=${n.outOfService.value}:${n.outOfService.effect}` });
  }
  return ev;
}

function attachmentEvidence(s: VolumeOnNode, nowMs: number): Evidence[] {
  const a = s.attachment;
  if (a === null) return [{ label: 'VolumeAttachment', value: `none for node ${s.node}` }];
  const ev: Evidence[] = [{ label: 'VolumeAttachment', value: `${a.name}: attached=${String(a.attached)}` }];
  if (a.deletionMs !== null) ev.push({ label: 'Deletion requested', value: `${formatDuration(nowMs - a.deletionMs)} ago` });
  if (a.finalizers.length > 0) ev.push({ label: 'Finalizers', value: a.finalizers.join(', ') });
  return ev;
}

/** The force-detach timer of an attached, undesired volume on its node. */
export function forceDetachTimer(s: VolumeOnNode, node: NodeFacts | undefined, nowMs: number): ForceDetachTimer | null {
  if (s.detachRequest === null) return null;
  const at = s.detachRequest.sinceMs + maxWaitForUnmountDurationMs;
  const qualifies = node === undefined || !node.healthy;
  const outOfService = node?.outOfService !== null && node?.outOfService !== undefined;
  const approx = s.detachRequest.lowerBound ? 'at the latest ' : '';
  let text: string;
  if (!s.inUse) text = `The node does not report the volume in use: the ADC detaches it without waiting.`;
  else if (outOfService) text = `The node has the ${TaintNodeOutOfService} taint: the ADC detaches without waiting for the unmount.`;
  else if (!qualifies) text = `The ADC waits for the node to unmount; it will not force-detach while ${s.node} is Ready, however long that takes.`;
  else if (at <= nowMs) text = `maxWaitForUnmountDuration (6 min) has passed ${approx}${formatDuration(nowMs - at)} ago and ${s.node} is not Ready: the ADC force-detaches (unless it runs with --disable-force-detach-on-timeout).`;
  else text = `The ADC force-detaches in ${s.detachRequest.lowerBound ? 'at most ' : ''}${formatDuration(at - nowMs)} (6 min after it started waiting) if ${s.node} is still not Ready then.`;
  return {
    node: s.node,
    detachRequestedAtMs: s.detachRequest.sinceMs,
    lowerBound: s.detachRequest.lowerBound,
    forceDetachPossibleAtMs: at,
    nodeQualifies: qualifies,
    outOfService,
    mountedByNode: s.inUse,
    text,
  };
}

const OUT_OF_SERVICE_STEP = (node: string): string =>
  `If and only if ${node} is really off: mark it out of service (kubectl taint nodes ${node} ${TaintNodeOutOfService}=${OUT_OF_SERVICE_TAINT_VALUE}:NoExecute). The pod garbage collector then force-deletes its terminating pods and the ADC detaches their volumes without waiting. If the node may still be running, bring it back or fence it first instead.`;

/** Why the ADC does not detach from a holder yet, as sentences, and the holder's timer. */
function holderDetachStory(v: VolumeAttachmentState, holder: VolumeOnNode, model: AttachmentModel, nowMs: number): { lines: string[]; timer: ForceDetachTimer | null; nextStep: string; checks: string[] } {
  const n = model.nodes[holder.node];
  if (holder.pods.length > 0) {
    const pods = holder.pods.map(podName).join(', ');
    if (n?.healthy === true) {
      return {
        lines: [
          `Pod(s) ${pods} on ${holder.node} still use the volume, and ${holder.node} is Ready: the ADC never detaches a volume from a node while a pod there that is not terminated uses it.`,
          `Typically two pods want one ReadWriteOnce volume at the same time (a Deployment with more than one replica, or a rollout that starts the new pod before the old one stopped).`,
        ],
        timer: null,
        nextStep: `Stop the pod(s) on ${holder.node} (scale the workload down, or use a Recreate rollout strategy): the kubelet on ${holder.node} unmounts, the ADC detaches, and then attaches the volume to the waiting node.`,
        checks: [CHECK_POD_REPLACEABLE, CHECK_DONT_DELETE_VA],
      };
    }
    const deleting = holder.pods.some((p) => p.deleting);
    return {
      lines: [
        `Pod(s) ${pods} on ${holder.node} still use the volume${deleting ? ' (being deleted, but never confirmed stopped)' : ''}. ${holder.node} is not Ready (${nodeStateText(n, nowMs)}; Lease ${leaseText(n, nowMs)}), so its kubelet cannot confirm that the containers stopped: to the API they are still running, which keeps the volume desired on ${holder.node}.`,
        `The 6-minute force detach does not start while a pod keeps the volume desired there: nothing changes until the pod is deleted for good.`,
      ],
      timer: null,
      nextStep: OUT_OF_SERVICE_STEP(holder.node),
      checks: [CHECK_NODE_OFF, CHECK_NODE_NOT_READY, CHECK_NO_WRITER, CHECK_TAINT_REMOVED],
    };
  }
  const timer = forceDetachTimer(holder, n, nowMs);
  const lines: string[] = [];
  if (holder.terminatedPods.length > 0) lines.push(`The pod(s) that used it on ${holder.node} (${holder.terminatedPods.map(podName).join(', ')}) are terminated: the ADC wants it detached from ${holder.node}.`);
  else lines.push(`No pod on ${holder.node} needs the volume any more: the ADC wants it detached from there.`);
  if (timer !== null) lines.push(timer.text);
  if (holder.attachment?.detachError !== null && holder.attachment?.detachError !== undefined) {
    lines.push(`The last detach failed: ${holder.attachment.detachError.message}`);
  }
  if (!holder.inUse || timer?.outOfService === true) {
    return { lines, timer, nextStep: 'Nothing to do but wait a few seconds: the detach is due now. If it does not finish, see the detach error of the VolumeAttachment.', checks: [CHECK_DONT_DELETE_VA] };
  }
  if (timer?.nodeQualifies === true) {
    return {
      lines,
      timer,
      nextStep: `Wait for the force detach, or, if ${holder.node} is confirmed off, mark it out of service to detach now (kubectl taint nodes ${holder.node} ${TaintNodeOutOfService}=${OUT_OF_SERVICE_TAINT_VALUE}:NoExecute).`,
      checks: [CHECK_NODE_OFF, CHECK_NO_WRITER, CHECK_TAINT_REMOVED],
    };
  }
  return {
    lines: [...lines, `${holder.node} is Ready and its kubelet still reports the volume in volumesInUse: the kubelet has not finished unmounting it.`],
    timer,
    nextStep: `Find out why the kubelet on ${holder.node} does not unmount (its volume manager's errors on that node's page, e.g. a busy device or a failed NodeUnstageVolume); it detaches as soon as the kubelet stops reporting it in use.`,
    checks: [CHECK_DONT_DELETE_VA, 'Never unmount by hand while a process still has files open on the volume.'],
  };
}

function multiAttachVerdict(v: VolumeAttachmentState, waiting: VolumeOnNode, holders: VolumeOnNode[], model: AttachmentModel, nowMs: number): Verdict {
  const holder = holders[0] as VolumeOnNode;
  const story = holderDetachStory(v, holder, model, nowMs);
  const otherPods = holders.flatMap((h) => h.pods);
  const ns = waiting.pods[0]?.namespace ?? '';
  const local = otherPods.filter((p) => p.namespace === ns).map((p) => p.name);
  const expectedEvent = otherPods.length === 0 ? multiAttachErrorMessage(v.pv) : multiAttachUsedByMessage(v.pv, local, otherPods.length - local.length);
  const hn = model.nodes[holder.node];
  return {
    kind: 'multi-attach',
    severity: 'blocked',
    node: waiting.node,
    title: `Multi-Attach: ${waiting.pods.map(podName).join(', ')} on ${waiting.node} waits for a volume still attached to ${holders.map((h) => h.node).join(', ')}`,
    explanation: [
      `${v.pv} is ${v.accessModes.join(', ')}: it can be attached to one node at a time, and the ADC counts it attached to ${holders.map((h) => h.node).join(', ')}. It will not attach it to ${waiting.node} until it is detached there.`,
      ...story.lines,
    ],
    evidence: [
      { label: 'Waiting pod(s)', value: waiting.pods.map(podName).join(', ') },
      { label: 'Holder node', value: holder.node },
      ...nodeEvidence('Holder', hn, nowMs),
      { label: 'Pods still using it on the holder', value: holder.pods.length === 0 ? 'none' : holder.pods.map((p) => `${podName(p)} (${p.phase}${p.deleting ? ', deleting' : ''})`).join(', ') },
      { label: 'Holder reports it in volumesInUse', value: holder.inUse ? 'yes' : 'no' },
      { label: 'Holder lists it in volumesAttached', value: holder.reportedAttached ? 'yes' : 'no' },
      ...attachmentEvidence(holder, nowMs),
    ],
    expectedEvent,
    timer: story.timer,
    nextStep: story.nextStep,
    checks: story.checks,
  };
}

function explainNode(v: VolumeAttachmentState, s: VolumeOnNode, model: AttachmentModel, nowMs: number): Verdict[] {
  const n = model.nodes[s.node];
  const out: Verdict[] = [];
  const a = s.attachment;
  const base = { node: s.node, expectedEvent: null, timer: null } as const;
  if (a?.attachError !== null && a?.attachError !== undefined && !a.attached) {
    out.push({
      ...base,
      kind: 'attach-error',
      severity: 'blocked',
      title: `Attach to ${s.node} fails: ${a.attachError.message}`,
      explanation: [
        `The driver ${v.driver} refused to attach ${v.pv} to ${s.node} (ControllerPublishVolume, called by its external-attacher for VolumeAttachment ${a.name}). The external-attacher retries with backoff; the pod(s) ${s.pods.map(podName).join(', ') || '(none)'} wait until it succeeds.`,
      ],
      evidence: [
        { label: 'attachError', value: a.attachError.message },
        { label: 'attachError time', value: a.attachError.timeMs === null ? 'unknown' : `${formatDuration(nowMs - a.attachError.timeMs)} ago` },
        ...attachmentEvidence(s, nowMs),
        ...nodeEvidence('Node', n, nowMs),
      ],
      nextStep: 'Fix the cause the error names on the storage side (capacity, permissions, the disk being attached elsewhere, the node ID the driver registered in CSINode); the next retry then attaches.',
      checks: [CHECK_BACKEND, CHECK_DONT_DELETE_VA],
    });
  }
  if (a?.detachError !== null && a?.detachError !== undefined) {
    out.push({
      ...base,
      kind: 'detach-error',
      severity: 'blocked',
      title: `Detach from ${s.node} fails: ${a.detachError.message}`,
      explanation: [
        `The driver ${v.driver} failed to detach ${v.pv} from ${s.node} (ControllerUnpublishVolume for VolumeAttachment ${a.name}). The volume stays attached, and a ReadWriteOnce volume cannot be attached elsewhere, until a retry succeeds.`,
      ],
      evidence: [
        { label: 'detachError', value: a.detachError.message },
        { label: 'detachError time', value: a.detachError.timeMs === null ? 'unknown' : `${formatDuration(nowMs - a.detachError.timeMs)} ago` },
        ...attachmentEvidence(s, nowMs),
        ...nodeEvidence('Node', n, nowMs),
      ],
      nextStep: 'Fix the cause on the storage side; the external-attacher retries the detach by itself and removes its finalizer when it succeeds.',
      checks: [CHECK_BACKEND, CHECK_DONT_DELETE_VA],
    });
  }
  if ((n === undefined || !n.exists) && (a !== null || s.reportedAttached)) {
    const timer = forceDetachTimer(s, n, nowMs);
    out.push({
      ...base,
      timer,
      kind: 'node-gone',
      severity: 'blocked',
      title: `Attached to ${s.node}, a node that no longer exists`,
      explanation: [
        `VolumeAttachment ${a?.name ?? '(none)'} attaches ${v.pv} to ${s.node}, but there is no Node ${s.node}. The ADC treats a node it cannot find as unhealthy.`,
        ...(s.pods.length > 0 ? [`Pod(s) ${s.pods.map(podName).join(', ')} still name ${s.node}; the pod garbage collector deletes pods of deleted nodes, after which the ADC's detach timer starts.`] : []),
        ...(timer !== null ? [timer.text] : []),
      ],
      evidence: [...attachmentEvidence(s, nowMs), { label: 'In volumesInUse', value: 'no Node to report it' }],
      nextStep: 'Wait for the ADC to detach (at most 6 minutes after the last pod of the node is gone). If the machine behind the deleted Node may still run with the disk attached, detach it on the storage side only after fencing that machine.',
      checks: [CHECK_NODE_OFF, CHECK_DONT_DELETE_VA],
    });
    return out;
  }
  if (s.attached && !s.desired && !out.some((x) => x.kind === 'detach-error')) {
    const timer = forceDetachTimer(s, n, nowMs);
    const deletingFor = a?.deletionMs === null || a?.deletionMs === undefined ? null : nowMs - a.deletionMs;
    if (deletingFor !== null && deletingFor > DETACH_SLOW_MS) {
      out.push({
        ...base,
        timer,
        kind: 'detaching-stuck',
        severity: 'suspect',
        title: `Detach from ${s.node} has not finished for ${formatDuration(deletingFor)}`,
        explanation: [
          `The ADC deleted VolumeAttachment ${a?.name ?? ''} ${formatDuration(deletingFor)} ago; its finalizer (${a?.finalizers.join(', ') || 'none'}) stays until the driver's external-attacher has detached the volume.`,
        ],
        evidence: [...attachmentEvidence(s, nowMs), ...nodeEvidence('Node', n, nowMs)],
        nextStep: "Check that the driver's external-attacher runs and what it logs for this VolumeAttachment.",
        checks: [CHECK_BACKEND, CHECK_DONT_DELETE_VA],
      });
    } else if (s.inUse && timer !== null && !timer.outOfService) {
      const story = holderDetachStory(v, s, model, nowMs);
      out.push({
        ...base,
        timer,
        kind: 'waiting-for-unmount',
        severity: timer.nodeQualifies ? 'blocked' : 'suspect',
        title: timer.nodeQualifies ? `Stuck on ${s.node} (not Ready): force detach ${timer.forceDetachPossibleAtMs <= nowMs ? 'due' : `possible in ${formatDuration(timer.forceDetachPossibleAtMs - nowMs)}`}` : `Waiting for ${s.node} to unmount before detaching`,
        explanation: story.lines,
        evidence: [...nodeEvidence('Node', n, nowMs), { label: 'In volumesInUse', value: 'yes' }, { label: 'In volumesAttached', value: s.reportedAttached ? 'yes' : 'no' }, ...attachmentEvidence(s, nowMs)],
        nextStep: story.nextStep,
        checks: story.checks,
      });
    } else {
      const since = s.detachRequest === null ? 0 : nowMs - s.detachRequest.sinceMs;
      out.push({
        ...base,
        timer,
        kind: 'detach-pending',
        severity: since > DETACH_SLOW_MS ? 'suspect' : 'info',
        title: `Detach from ${s.node} is due`,
        explanation: [timer?.text ?? 'The ADC detaches it at its next pass.'],
        evidence: [...nodeEvidence('Node', n, nowMs), { label: 'In volumesInUse', value: s.inUse ? 'yes' : 'no' }, ...attachmentEvidence(s, nowMs)],
        nextStep: 'Nothing to do: the detach is due. If it stays, see the VolumeAttachment and the external-attacher.',
        checks: [CHECK_DONT_DELETE_VA],
      });
    }
  }
  if (s.pods.length > 0 && n?.exists === true && !n.controllerManaged) {
    out.push({
      ...base,
      kind: 'not-controller-managed',
      severity: 'info',
      title: `${s.node} attaches its volumes itself`,
      explanation: [`${s.node} does not carry volumes.kubernetes.io/controller-managed-attach-detach=true, so the ADC does not attach for it: its kubelet does (--enable-controller-attach-detach=false).`],
      evidence: nodeEvidence('Node', n, nowMs),
      nextStep: 'Look at the kubelet on that node for attach problems.',
      checks: [],
    });
  }
  if (s.desired && !s.attached && a !== null && a.attachError === null) {
    const age = a.createdMs === null ? 0 : nowMs - a.createdMs;
    if (age > ATTACH_SLOW_MS) {
      out.push({
        ...base,
        kind: 'attaching',
        severity: 'suspect',
        title: `Attach to ${s.node} pending for ${formatDuration(age)} without an error`,
        explanation: [`VolumeAttachment ${a.name} exists for ${formatDuration(age)} and is not attached, with no error: the driver's external-attacher has not acted on it (not running, or not watching this driver).`],
        evidence: attachmentEvidence(s, nowMs),
        nextStep: `Check that the external-attacher of ${v.driver} runs and holds its leader lease.`,
        checks: [CHECK_BACKEND],
      });
    }
  }
  if (s.reportedAttached && a === null) {
    out.push({
      ...base,
      kind: 'status-without-attachment',
      severity: 'suspect',
      title: `${s.node}'s status lists the volume as attached, but no VolumeAttachment exists`,
      explanation: [
        `The ADC publishes what it believes is attached in the node's status.volumesAttached; for a CSI volume that belief comes from a VolumeAttachment, and there is none. The controller's actual state is stale; it verifies attachments periodically (one batched check per node) and then corrects the status.`,
      ],
      evidence: [{ label: 'In volumesAttached', value: 'yes' }, { label: 'VolumeAttachment', value: 'none' }],
      nextStep: 'Wait for the ADC to verify the node (about a minute). If it stays, restarting kube-controller-manager rebuilds its actual state from VolumeAttachments.',
      checks: [CHECK_DONT_DELETE_VA],
    });
  }
  if (n?.outOfService !== null && n?.outOfService !== undefined && (s.attached || s.pods.length > 0)) {
    out.push({
      ...base,
      kind: 'out-of-service',
      severity: 'info',
      title: `${s.node} is marked out of service`,
      explanation: [
        `${s.node} has the ${TaintNodeOutOfService} taint${n.outOfService.sinceMs === null ? '' : ` since ${formatDuration(nowMs - n.outOfService.sinceMs)}`}: pods without a matching toleration are force-deleted there, and the ADC detaches its volumes without waiting for an unmount.`,
      ],
      evidence: nodeEvidence('Node', n, nowMs),
      nextStep: `Remove the taint once ${s.node} is back and clean (kubectl taint nodes ${s.node} ${TaintNodeOutOfService}-).`,
      checks: [CHECK_TAINT_REMOVED],
    });
  }
  return out;
}

const RANK: Record<Severity | 'ok', number> = { blocked: 3, suspect: 2, info: 1, ok: 0 };

/** Every verdict on one volume, most severe first. */
export function explainVolume(v: VolumeAttachmentState, model: AttachmentModel, nowMs: number): VolumeExplanation {
  const verdicts: Verdict[] = [];
  const holders = v.nodes.filter((s) => s.attached);
  for (const s of v.nodes) {
    if (s.desired && !s.attached && !v.multiAttachAllowed) {
      const others = holders.filter((h) => h.node !== s.node);
      if (others.length > 0) verdicts.push(multiAttachVerdict(v, s, others, model, nowMs));
    }
    verdicts.push(...explainNode(v, s, model, nowMs));
  }
  verdicts.sort((a, b) => RANK[b.severity] - RANK[a.severity]);
  const worst = verdicts[0]?.severity ?? 'ok';
  return { pv: v.pv, claim: v.claim === null ? null : `${v.claim.namespace}/${v.claim.name}`, driver: v.driver, severity: worst, verdicts };
}

/** The volumes with a blocked or suspect verdict, blocked first, then by PV name. */
export function problemVolumes(model: AttachmentModel, nowMs: number): VolumeExplanation[] {
  return model.volumes
    .map((v) => explainVolume(v, model, nowMs))
    .filter((e) => e.severity === 'blocked' || e.severity === 'suspect')
    .sort((a, b) => RANK[b.severity] - RANK[a.severity] || (a.pv < b.pv ? -1 : a.pv > b.pv ? 1 : 0));
}
