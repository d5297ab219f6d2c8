/**
 * Observe mode's evidence from the kubelet, in the shape the managed-mode views already read. An
 * observing agent has no operations of its own (`operations` stays empty): what the kubelet is
 * doing is in `observe.plan`, and its own backoff, error and event time in each entry's
 * `kubeletBackoff` (read from its FailedMount/FailedAttachVolume events). So the pod page, the
 * volume page, the embeds and the Markdown summary show the same error, event time and backoff
 * as the plan table, each planned operation with a kubelet backoff stands for an operation in
 * backoff ({@link kubeletOperations}); {@link kubeletEvidenceOf} gives the backoff back, for the
 * words that say whose evidence it is. Pure; memoized per plan array (the observe section
 * travels whole, so an unchanged plan is the same array).
 */
import { kubeletStepProgress, type KubeletBackoff, type KubeletProgress, type Observe, type PlannedOperation } from '../api/observe.ts';
import type { Operation } from '../api/snapshot.ts';

/** The kubelet's backoff behind an operation of {@link kubeletOperations}, with the plan entry. */
export interface KubeletEvidence {
  readonly planned: PlannedOperation;
  readonly backoff: KubeletBackoff;
}

/** How far the kubelet got, from the failed step named in its backoff (lib/api/observe.ts kubeletStepProgress). */
export function kubeletProgress(backoff: Pick<KubeletBackoff, 'operation'>): KubeletProgress {
  return kubeletStepProgress(backoff.operation);
}

const evidence = new WeakMap<Operation, KubeletEvidence>();
const cache = new WeakMap<readonly PlannedOperation[], Operation[]>();

/**
 * The plan's entries with a kubelet backoff as operations in backoff: `lastError` the kubelet's
 * error verbatim, `lastErrorAt` its event's time, `retryAt`/`durationBeforeRetryMs` its
 * deadline, `failures` the event's count (0 when unknown), `nodeName` null. Entries without a
 * backoff are left out: nothing says the kubelet tried them.
 */
export function kubeletOperations(observe: Pick<Observe, 'plan'> | undefined): readonly Operation[] {
  if (observe === undefined) return [];
  const cached = cache.get(observe.plan);
  if (cached !== undefined) return cached;
  const out: Operation[] = [];
  for (const planned of observe.plan) {
    const backoff = planned.kubeletBackoff;
    if (backoff === null) continue;
    const op: Operation = {
      operationName: planned.operation,
      volume: planned.volume,
      podUid: planned.podUid,
      nodeName: null,
      state: 'backoff',
      failures: backoff.count ?? 0,
      lastError: backoff.error,
      lastErrorAt: backoff.observedAt,
      retryAt: backoff.retryAt,
      durationBeforeRetryMs: backoff.durationBeforeRetryMs,
      startedAt: null,
    };
    evidence.set(op, { planned, backoff });
    out.push(op);
  }
  cache.set(observe.plan, out);
  return out;
}

/** The kubelet's evidence behind `op` when it came from {@link kubeletOperations}; null for the agent's own operations. */
export function kubeletEvidenceOf(op: Operation | null): KubeletEvidence | null {
  return op === null ? null : (evidence.get(op) ?? null);
}

/**
 * Why the volume is not in the actual state, in the words of the mode. Observe mode: the agent
 * found nothing of it in the kubelet's root dir, and says how far the kubelet's own event shows
 * it got (a failed SetUp: attach and device mount are done as far as the kubelet is concerned).
 */
export function notOnNodeText(observed: boolean, rows: readonly { readonly kubelet: KubeletEvidence | null }[]): string {
  if (!observed) return 'Not in the actual state: not attached (or not verified) on this node yet.';
  const step = rows.map((r) => r.kubelet?.backoff.operation).find((op) => op !== undefined);
  const seen = 'Nothing of it on disk in the kubelet’s root dir';
  return step === undefined ? `${seen}, and no kubelet event says how far it got.` : `${seen}; the kubelet’s event shows it got as far as ${step}, which failed (the steps before it are done as far as the kubelet is concerned).`;
}
