/**
 * The containers' states of this node's pods, kept beside the pod objects rather than in them.
 *
 * Why beside: the volume manager reprocesses a pod whenever its object changes (KubeSource
 * publishes such pods as `updated`), and the kubelet rewrites container statuses on every
 * container transition. The pod objects of api-objects.ts therefore keep only `status.phase`;
 * the container statuses go through this separate channel to the agent's snapshot (and the
 * dashboard's "ContainerCreating since 1 min"), without touching the engine.
 *
 * Contracts:
 * - Input is a pod as the informer delivers it (a client-node model or raw watch JSON); only
 *   `status.containerStatuses`, `initContainerStatuses` and `ephemeralContainerStatuses` are
 *   read. A container status that does not fit the shape is skipped, never the pod.
 * - `since`: `running.startedAt` and `terminated.finishedAt` as the kubelet wrote them; the API
 *   has no time for a waiting state, so for `waiting` it is when this tracker first saw the
 *   container waiting with that reason (`sinceObserved: true`), kept while the reason stays.
 * - A pod without any container status has no entry (`get` answers undefined): nothing is
 *   invented for a pod the kubelet has not reported on.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { ContainerState } from '../../api/snapshot.ts';
import { isJsonObject, toPlainJson } from './plain-json.ts';

const stateSchema = z.object({
  waiting: z.object({ reason: z.string().optional(), message: z.string().optional() }).optional(),
  running: z.object({ startedAt: z.string().optional() }).optional(),
  terminated: z
    .object({
      reason: z.string().optional(),
      message: z.string().optional(),
      exitCode: z.number().int().optional(),
      finishedAt: z.string().optional(),
    })
    .optional(),
});

const containerStatusSchema = z.object({
  name: z.string(),
  state: stateSchema.optional(),
  ready: z.boolean().optional(),
  restartCount: z.number().int().nonnegative().optional(),
});

const podStatusListsSchema = z.object({
  status: z
    .object({
      initContainerStatuses: z.array(z.unknown()).optional(),
      containerStatuses: z.array(z.unknown()).optional(),
      ephemeralContainerStatuses: z.array(z.unknown()).optional(),
    })
    .optional(),
});

type ContainerKind = ContainerState['kind'];
type ContainerStatus = z.infer<typeof containerStatusSchema>;

/** An RFC 3339 time as epoch ms; null when absent or unreadable. */
function epochMs(time: string | undefined): number | null {
  if (time === undefined) return null;
  const ms = Date.parse(time);
  return Number.isNaN(ms) || ms < 0 ? null : ms;
}

/** The state of one container status; `since` of a waiting state is filled in by the tracker. */
function stateOf(status: ContainerStatus, kind: ContainerKind): ContainerState {
  const base = { name: status.name, kind, ready: status.ready ?? false, restartCount: status.restartCount ?? 0 };
  const { waiting, running, terminated } = status.state ?? {};
  if (waiting !== undefined) {
    return { ...base, state: 'waiting', ...optional('reason', waiting.reason), ...optional('message', waiting.message), since: null, sinceObserved: true };
  }
  if (running !== undefined) return { ...base, state: 'running', since: epochMs(running.startedAt), sinceObserved: false };
  if (terminated !== undefined) {
    return {
      ...base,
      state: 'terminated',
      ...optional('reason', terminated.reason),
      ...optional('message', terminated.message),
      ...(terminated.exitCode === undefined ? {} : { exitCode: terminated.exitCode }),
      since: epochMs(terminated.finishedAt),
      sinceObserved: false,
    };
  }
  return { ...base, state: 'unknown', since: null, sinceObserved: false };
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined || value === '' ? {} : ({ [key]: value } as Record<K, string>);
}

/**
 * The containers' states of a pod object, in the order init, regular, ephemeral (each in the
 * API server's order), with `since` of waiting states still null. Empty when it has none.
 */
export function containerStatesOf(raw: unknown): ContainerState[] {
  // Only the three lists are read: the rest of the pod is not converted.
  const rawStatus: unknown = isJsonObject(raw) ? raw.status : undefined;
  let status: unknown = rawStatus;
  if (isJsonObject(rawStatus)) {
    const { initContainerStatuses, containerStatuses, ephemeralContainerStatuses } = rawStatus;
    status = { initContainerStatuses, containerStatuses, ephemeralContainerStatuses };
  }
  const parsed = podStatusListsSchema.safeParse(toPlainJson({ status }));
  if (!parsed.success) return [];
  const lists: [ContainerKind, unknown[] | undefined][] = [
    ['init', parsed.data.status?.initContainerStatuses],
    ['container', parsed.data.status?.containerStatuses],
    ['ephemeral', parsed.data.status?.ephemeralContainerStatuses],
  ];
  const out: ContainerState[] = [];
  for (const [kind, list] of lists) {
    for (const item of list ?? []) {
      const container = containerStatusSchema.safeParse(item);
      if (container.success) out.push(stateOf(container.data, kind));
    }
  }
  return out;
}

/** The containers' states per pod UID, with the first-seen times of waiting states (see the file comment). */
export class ContainerStateTracker {
  private readonly byPod = new Map<string, readonly ContainerState[]>();

  /** `now`: the agent's wall clock in epoch ms (integers). */
  constructor(private readonly now: () => number) {}

  /** Records the pod object's container statuses; true when what {@link get} answers changed. */
  update(uid: string, raw: unknown): boolean {
    const previous = this.byPod.get(uid);
    const fresh = containerStatesOf(raw);
    if (fresh.length === 0) return this.remove(uid);
    const at = Math.floor(this.now());
    const states = fresh.map((c) => {
      if (c.state !== 'waiting') return c;
      const before = previous?.find((p) => p.name === c.name && p.kind === c.kind);
      const same = before !== undefined && before.state === 'waiting' && before.reason === c.reason;
      return { ...c, since: same ? before.since : at };
    });
    if (previous !== undefined && isDeepStrictEqual(previous, states)) return false;
    this.byPod.set(uid, Object.freeze(states));
    return true;
  }

  /** Forgets a pod; true when it had an entry. */
  remove(uid: string): boolean {
    return this.byPod.delete(uid);
  }

  /** The pod's containers' states; undefined when the source has none for it. */
  get(uid: string): readonly ContainerState[] | undefined {
    return this.byPod.get(uid);
  }
}
