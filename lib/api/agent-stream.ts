/**
 * The events of `GET /api/v1/events`: `event: snapshot` (a full {@link Snapshot}) and
 * `event: delta` (a {@link Delta}), each with `id: <agent startedAt>.<seq>` (see
 * {@link streamEventId}). Encoders for the agent, a decoder and a pure reducer for the dashboard.
 */
import { applyDeltaIfNewer, DeltaSchema, DeltaSequenceError, type Delta } from './delta.ts';
import { normalizeSnapshot } from './normalize-snapshot.ts';
import { describeZodError } from './request-body.ts';
import { formatSseEvent, type SseMessage } from './sse.ts';
import { type Snapshot } from './snapshot.ts';
import { safeParseSnapshot } from './compact-snapshot.ts';

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

/**
 * The SSE id of the state at `seq` of the agent process started at `startedAt`:
 * `<startedAt>.<seq>`. `seq` starts again at 0 when the agent restarts, so a bare seq sent back
 * as `Last-Event-ID` after a restart could name a different state of the new process; with the
 * process's start time in the id, the agent resumes only its own series and answers anything
 * else with a snapshot.
 */
export function streamEventId(startedAt: number, seq: number): string {
  return `${String(startedAt)}.${String(seq)}`;
}

/** A stream event id (`Last-Event-ID`) as its parts, or null when it is not `<startedAt>.<seq>`. */
export function parseStreamEventId(value: string): { startedAt: number; seq: number } | null {
  const m = /^([0-9]{1,15})\.([0-9]{1,15})$/.exec(value.trim());
  if (m === null) return null;
  return { startedAt: Number(m[1]), seq: Number(m[2]) };
}

/** `event: snapshot` with `id: <startedAt>.<seq>` and the snapshot as JSON. */
export function encodeSnapshotEvent(snapshot: Snapshot): string {
  return formatSseEvent({ event: SNAPSHOT_EVENT, id: streamEventId(snapshot.agent.startedAt, snapshot.seq), data: snapshot });
}

/** `event: delta` with `id: <startedAt>.<seq>` (the agent process's start time) and the delta as JSON. */
export function encodeDeltaEvent(delta: Delta, startedAt: number): string {
  return formatSseEvent({ event: DELTA_EVENT, id: streamEventId(startedAt, delta.seq), data: delta });
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
    const parsed = safeParseSnapshot(json);
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
