/**
 * The events of `GET /api/v1/events`: `event: snapshot` (a full {@link Snapshot}) and
 * `event: delta` (a {@link Delta}), each with `id: <seq>`. Encoders for the agent, a decoder and
 * a pure reducer for the dashboard.
 */
import { applyDeltaIfNewer, DeltaSchema, DeltaSequenceError, type Delta } from './delta.ts';
import { normalizeSnapshot } from './normalize-snapshot.ts';
import { describeZodError } from './request-body.ts';
import { formatSseEvent, type SseMessage } from './sse.ts';
import { SnapshotSchema, type Snapshot } from './snapshot.ts';

/** The SSE event type of a full snapshot. */
export const SNAPSHOT_EVENT = 'snapshot';
/** The SSE event type of a delta. */
export const DELTA_EVENT = 'delta';

/** A decoded event of the agent's stream. */
export type AgentStreamEvent = { type: 'snapshot'; snapshot: Snapshot } | { type: 'delta'; delta: Delta };

/** An `event: snapshot` or `event: delta` whose data is not valid JSON or breaks the schema. */
export class InvalidStreamEventError extends Error {
  override readonly name = 'InvalidStreamEventError';

  constructor(
    /** The SSE event type. */
    readonly event: string,
    /** The SSE id of the event; `''` if none. */
    readonly id: string,
    reason: string,
  ) {
    super(`invalid ${event} event${id === '' ? '' : ` ${id}`}: ${reason}`);
  }
}

/** True for an {@link InvalidStreamEventError}. */
export function isInvalidStreamEventError(err: unknown): err is InvalidStreamEventError {
  return err instanceof InvalidStreamEventError;
}

/** `event: snapshot` with `id: <seq>` and the snapshot as JSON. */
export function encodeSnapshotEvent(snapshot: Snapshot): string {
  return formatSseEvent({ event: SNAPSHOT_EVENT, id: snapshot.seq, data: snapshot });
}

/** `event: delta` with `id: <seq>` and the delta as JSON. */
export function encodeDeltaEvent(delta: Delta): string {
  return formatSseEvent({ event: DELTA_EVENT, id: delta.seq, data: delta });
}

/**
 * Parses and validates one SSE message of the stream. Returns `null` for other event types
 * (ignored, so the agent may add some). Throws an {@link InvalidStreamEventError} for a
 * snapshot or delta whose data is not valid.
 */
export function decodeAgentStreamEvent(message: SseMessage): AgentStreamEvent | null {
  if (message.event !== SNAPSHOT_EVENT && message.event !== DELTA_EVENT) return null;
  let json: unknown;
  try {
    json = JSON.parse(message.data);
  } catch (err) {
    throw new InvalidStreamEventError(message.event, message.id, err instanceof Error ? err.message : String(err));
  }
  if (message.event === SNAPSHOT_EVENT) {
    const parsed = SnapshotSchema.safeParse(json);
    if (!parsed.success) throw new InvalidStreamEventError(message.event, message.id, describeZodError(parsed.error));
    return { type: 'snapshot', snapshot: parsed.data };
  }
  const parsed = DeltaSchema.safeParse(json);
  if (!parsed.success) throw new InvalidStreamEventError(message.event, message.id, describeZodError(parsed.error));
  return { type: 'delta', delta: parsed.data };
}

/**
 * The dashboard's reducer: the client state after one stream event. A snapshot always replaces
 * the state (it is what a (re)connect starts with, also after an agent restart reset `seq`). A
 * delta is applied with {@link applyDeltaIfNewer}: stale ones return `state` unchanged. Throws a
 * {@link DeltaSequenceError} for a delta that does not follow `state` (or comes before any
 * snapshot); the client should then reconnect, sending its `Last-Event-ID`.
 */
export function reduceAgentStream(state: Snapshot | null, event: AgentStreamEvent): Snapshot {
  if (event.type === 'snapshot') return normalizeSnapshot(event.snapshot);
  if (state === null) throw new DeltaSequenceError(null, event.delta.fromSeq, event.delta.seq);
  return applyDeltaIfNewer(state, event.delta);
}
