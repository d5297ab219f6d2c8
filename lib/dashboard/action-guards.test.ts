import { describe, expect, it } from 'vitest';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { describeRetry, describeUnmount, resyncAvailability, retryAvailability, retryRequestFor, unmountAvailability } from './action-guards.ts';
import { deriveVolumeRows, type VolumeRow } from './pipeline.ts';

const snapshot = exampleSnapshot();
const op = snapshot.operations[0];
const desiredRow = deriveVolumeRows(snapshot)[0] as VolumeRow;
const orphan: VolumeRow = { ...desiredRow, desired: false, operation: null };

describe('when actions are offered', () => {
  it.each([
    { name: 'resync on a reachable agent', availability: resyncAvailability('live'), reason: null },
    { name: 'resync while reconnecting (the agent may still answer)', availability: resyncAvailability('reconnecting'), reason: null },
    { name: 'resync on an unreachable agent', availability: resyncAvailability('unavailable'), reason: 'the agent is unreachable' },
    { name: 'retry of an operation in backoff', availability: op === undefined ? null : retryAvailability(op, 'live'), reason: null },
    { name: 'retry of a running operation', availability: op === undefined ? null : retryAvailability({ ...op, state: 'running' }, 'live'), reason: 'it is running right now (the agent would answer 409)' },
    { name: 'unmount of a volume the pod still wants', availability: unmountAvailability(desiredRow, snapshot, 'live'), reason: 'pod default/web-0 still wants this volume (the agent would refuse)' },
    { name: 'unmount of a mount no longer desired', availability: unmountAvailability(orphan, snapshot, 'live'), reason: null },
    {
      name: 'unmount on an agent in observe mode',
      availability: unmountAvailability(orphan, { ...snapshot, observing: true }, 'live'),
      reason: 'this agent only observes the kubelet (--mode=observe): it never unmounts',
    },
    { name: 'unmount before the states are synced', availability: unmountAvailability(orphan, { statesSynced: false }, 'live'), reason: 'the agent’s states are not synced yet (it would answer 503)' },
    { name: 'unmount of something not mounted', availability: unmountAvailability({ ...orphan, mount: null }, snapshot, 'live'), reason: 'it is not mounted for this pod' },
  ])('$name', ({ availability, reason }) => {
    expect(availability).toEqual(reason === null ? { allowed: true } : { allowed: false, reason });
  });

  it('the retry body leaves out the pod of a volume-level operation', () => {
    if (op === undefined) throw new Error('fixture');
    expect(retryRequestFor(op)).toEqual({ volume: op.volume, podUid: op.podUid });
    expect(retryRequestFor({ ...op, podUid: null })).toEqual({ volume: op.volume });
  });

  it('the unmount confirmation names the volume, the pod and the node, and says what happens on refusal', () => {
    const text = describeUnmount('node-a', orphan);
    expect(text).toContain('“config” (kubernetes.io/configmap/');
    expect(text).toContain('of pod default/web-0');
    expect(text).toContain('on node-a');
    expect(text).toContain('If a check fails, nothing is done');
  });

  it('the retry confirmation says a failing retry restarts the backoff at 500 ms, not at a doubled delay', () => {
    if (op === undefined) throw new Error('fixture');
    const text = describeRetry('node-a', { ...op, failures: 4, durationBeforeRetryMs: 8_000 });
    expect(text).toContain('clears the backoff of');
    expect(text).toContain('4 failures so far');
    expect(text).toContain('If it fails again, the backoff restarts at 500 ms (the kubelet’s initial durationBeforeRetry).');
    expect(text).not.toMatch(/doubl/);
  });
});
