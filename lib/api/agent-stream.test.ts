import { describe, expect, it } from 'vitest';
import {
  decodeAgentStreamEvent,
  encodeDeltaEvent,
  encodeSnapshotEvent,
  parseStreamEventId,
  streamEventId,
  isInvalidStreamEventError,
  reduceAgentStream,
  type AgentStreamEvent,
} from './agent-stream.ts';
import { computeDelta, isDeltaSequenceError } from './delta.ts';
import { normalizeSnapshot } from './normalize-snapshot.ts';
import { createSseParser, SSE_KEEPALIVE, type SseMessage } from './sse.ts';
import { exampleSnapshot, emptySnapshot } from './testing/snapshot-fixtures.ts';
import type { Snapshot } from './snapshot.ts';

function messages(text: string): SseMessage[] {
  const out: SseMessage[] = [];
  const parser = createSseParser((m) => out.push(m));
  parser.push(text);
  return out;
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('the agent stream', () => {
  const first = exampleSnapshot();
  const second: Snapshot = { ...first, seq: 43, statesSynced: false };
  const third: Snapshot = { ...second, seq: 44, desired: { pods: [] } };

  it('a client that reads the encoded stream ends with the agent’s state', () => {
    // Arrange
    const text =
      encodeSnapshotEvent(first) +
      SSE_KEEPALIVE +
      encodeDeltaEvent(computeDelta(first, second), first.agent.startedAt) +
      encodeDeltaEvent(computeDelta(second, third), first.agent.startedAt);
    // Act
    let state: Snapshot | null = null;
    const ids: string[] = [];
    for (const message of messages(text)) {
      const event = decodeAgentStreamEvent(message);
      if (event !== null) state = reduceAgentStream(state, event);
      ids.push(message.id);
    }
    // Assert
    const t0 = String(first.agent.startedAt);
    expect(ids).toEqual([`${t0}.42`, `${t0}.43`, `${t0}.44`]);
    expect(state).toStrictEqual(normalizeSnapshot(third));
  });

  it('stream event ids are <startedAt>.<seq>, and nothing else parses as one', () => {
    expect(streamEventId(1_796_025_600_000, 7)).toBe('1796025600000.7');
    expect(parseStreamEventId('1796025600000.7')).toEqual({ startedAt: 1_796_025_600_000, seq: 7 });
    for (const bad of ['7', '', '1.2.3', 'a.1', '1.-1', '1.1e3']) expect(parseStreamEventId(bad)).toBeNull();
  });

  it('a snapshot replaces the state even when its seq is lower (agent restarted)', () => {
    const restarted = emptySnapshot({ seq: 0 });
    expect(reduceAgentStream(first, { type: 'snapshot', snapshot: restarted })).toStrictEqual(restarted);
  });

  it('a stale delta leaves the state as is', () => {
    const delta = computeDelta(first, second);
    const state = reduceAgentStream(first, { type: 'delta', delta });
    expect(reduceAgentStream(state, { type: 'delta', delta })).toBe(state);
  });

  it.each<{ name: string; state: Snapshot | null; event: AgentStreamEvent }>([
    { name: 'a delta before any snapshot', state: null, event: { type: 'delta', delta: computeDelta(first, second) } },
    { name: 'a delta after a gap', state: first, event: { type: 'delta', delta: computeDelta(second, third) } },
  ])('rejects $name', ({ state, event }) => {
    expect(isDeltaSequenceError(caught(() => reduceAgentStream(state, event)))).toBe(true);
  });

  it('ignores event types it does not know', () => {
    expect(decodeAgentStreamEvent({ event: 'hello', data: '{}', id: '' })).toBeNull();
  });

  it.each([
    { name: 'data that is not JSON', message: { event: 'delta', data: '{', id: '5' }, contains: 'invalid delta event 5' },
    {
      name: 'a snapshot that breaks the schema',
      message: { event: 'snapshot', data: '{"seq":-1}', id: '' },
      contains: 'invalid snapshot event: nodeName: ',
    },
    {
      name: 'a delta that does not advance',
      message: { event: 'delta', data: '{"fromSeq":3,"seq":3}', id: '3' },
      contains: 'seq: must be greater than fromSeq',
    },
  ])('rejects $name', ({ message, contains }) => {
    const err = caught(() => decodeAgentStreamEvent(message));
    expect(isInvalidStreamEventError(err)).toBe(true);
    expect(String(err)).toContain(contains);
  });
});
