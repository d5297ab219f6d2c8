import { afterEach, describe, expect, it } from 'vitest';
import { UnmountResponseSchema, UnmountRunningResponseSchema, type UnmountRunningResponse } from '../../lib/api/actions.ts';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { type Snapshot } from '../../lib/api/snapshot.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { EmptyNodeName } from '../../lib/volume/types.ts';
import { SCRIPTED_TEARDOWN_ERROR, ScriptedTearDownPlugin } from '../../lib/volumemanager/testing/scripted-teardown-plugin.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { DEVICE1, mountPod1, POD1, startServer, type ServerFixture } from './testing/server-fixture.ts';
import { TEARDOWN_STILL_RUNNING_MESSAGE } from './unmount-volume.ts';

/** Every check of a forced TearDown that passed all of them, in order. */
const ALL_CHECKS = [
  'states-synced',
  'reconstruction-done',
  'pod-not-desired',
  'pod-absent-from-source',
  'source-no-error',
  'volume-mounted',
  'no-operation-running',
  'rate-limit',
  'operation-lock',
];

describe('POST /api/v1/unmount', () => {
  let fx: ServerFixture | undefined;
  let plugin: ScriptedTearDownPlugin;
  let releaseHeldOperation = (): void => undefined;
  afterEach(async () => {
    plugin.release();
    releaseHeldOperation();
    await fx?.close();
    fx = undefined;
  });

  const start = async (): Promise<ServerFixture> => {
    plugin = new ScriptedTearDownPlugin();
    fx = await startServer({ harness: { fakePlugin: plugin } });
    return fx;
  };

  /**
   * pod1's volume mounted, then an orphan: the loops stop (so the reconciler does not clean it up
   * itself) and the pod leaves the pod source and the desired state.
   */
  async function withOrphan(): Promise<ServerFixture> {
    const f = await start();
    await mountPod1(f);
    await f.harness.vm.stop();
    f.harness.pods.delete(POD1);
    f.harness.dsw.deletePodFromVolume(POD1, DEVICE1);
    return f;
  }

  const snapshot = async (f: ServerFixture): Promise<Snapshot> => parseSnapshot((await f.client.get('/api/v1/snapshot')).json);
  const podMounts = (s: Snapshot): string[] => s.actual.volumes.flatMap((v) => v.pods.map((p) => `${p.podUid}/${v.uniqueVolumeName}`));

  it.each([
    { name: 'the unique volume name', volume: DEVICE1 },
    { name: "the pod's volume name", volume: 'volume-name' },
  ])('unmounts an orphan named by $name and audits it with every check', async ({ volume }) => {
    // Arrange
    const f = await withOrphan();
    expect(podMounts(await snapshot(f))).toEqual([`${POD1}/${DEVICE1}`]);

    // Act
    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume });
    const after = await snapshot(f);

    // Assert: the answer
    expect(res.status).toBe(200);
    const body = UnmountResponseSchema.parse(res.json);
    expect(body).toMatchObject({ podUid: POD1, volume: DEVICE1, outcome: 'unmounted', error: null });
    expect(body.checks.map((c) => [c.name, c.ok])).toEqual(ALL_CHECKS.map((name) => [name, true]));
    // Assert: the effect, and the audit entry in the next snapshot
    expect(plugin.counts.tearDown).toBe(1);
    expect(podMounts(after)).toEqual([]);
    expect(after.audit).toEqual([
      {
        time: f.harness.clock.now(),
        caller: 'test-client',
        groups: [],
        incidentId: null,
        reason: null,
        action: 'unmount',
        target: `${POD1}/${volume}`,
        checks: body.checks,
        result: 'succeeded',
        message: null,
      },
    ]);
  });

  it('refuses while the pod still wants the volume, naming it', async () => {
    const f = await start();
    await mountPod1(f);

    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    expect(res.status).toBe(409);
    const error = ApiErrorBodySchema.parse(res.json).error;
    expect(error.code).toBe('conflict');
    expect(error.message).toBe(`pod ${POD1} still wants volume volume-name`);
    expect(error.checks?.find((c) => c.name === 'pod-not-desired')).toEqual({
      name: 'pod-not-desired',
      ok: false,
      detail: 'pod default/pod1 is in the desired state and wants this volume',
    });
    expect(plugin.counts.tearDown).toBe(0);
  });

  it.each([
    {
      name: 'a pod source has not listed every pod',
      arrange: (f: ServerFixture) => {
        f.harness.pods.ready = false;
      },
      failed: ['states-synced'],
      message: 'desired and actual states are not synced yet',
    },
    {
      name: 'an operation is running on the volume for the pod',
      arrange: (f: ServerFixture) => {
        f.harness.pendingOperations.run(DEVICE1, POD1, EmptyNodeName, {
          operationName: 'volume_mount',
          operationFunc: () =>
            new Promise((resolve) => {
              releaseHeldOperation = () => {
                resolve({});
              };
            }),
        });
      },
      failed: ['no-operation-running'],
      message: `an operation (volume_mount) is running on volume ${DEVICE1}`,
    },
  ])('refuses an orphan while $name, with every check', async ({ arrange, failed, message }) => {
    // Arrange
    const f = await withOrphan();
    arrange(f);

    // Act
    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    // Assert
    expect(res.status).toBe(409);
    const error = ApiErrorBodySchema.parse(res.json).error;
    expect(error.message).toBe(message);
    expect(error.checks?.filter((c) => !c.ok).map((c) => c.name)).toEqual(failed);
    expect(error.checks).toHaveLength(7);
    expect(plugin.counts.tearDown).toBe(0);
    expect((await snapshot(f)).audit.at(-1)).toMatchObject({ action: 'unmount', result: 'refused', message, checks: error.checks });
  });

  it('refuses before reconstruction has run, reporting both unsynced states and pending reconstruction', async () => {
    const f = await start();

    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    expect(res.status).toBe(409);
    const error = ApiErrorBodySchema.parse(res.json).error;
    expect(error.checks?.map((c) => [c.name, c.ok])).toEqual([
      ['states-synced', false],
      ['reconstruction-done', false],
      ['pod-not-desired', true],
      ['pod-absent-from-source', true],
      ['source-no-error', true],
      ['volume-mounted', false],
      ['no-operation-running', true],
    ]);
    expect(error.checks?.[1]?.detail).toBe('reconstruction is pending');
  });

  it('answers 404 when every safety check passes but the pod has no such mount', async () => {
    const f = await withOrphan();

    const res = await f.client.post('/api/v1/unmount', { podUid: 'other-pod', volume: DEVICE1 });

    expect(res.status).toBe(404);
    expect(ApiErrorBodySchema.parse(res.json).error).toEqual({ code: 'not-found', message: `pod other-pod has no mount of volume ${DEVICE1}` });
  });

  it('answers 202 when TearDown is still running after the wait, and 409 for a second request meanwhile', async () => {
    // Arrange
    const f = await withOrphan();
    plugin.hold();

    // Act: start, wait until the TearDown runs, then let 30 s of agent time pass
    const first = f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });
    await waitFor(() => f.harness.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), { what: 'the TearDown to start' });
    await f.harness.clock.advance(30_000);
    const accepted = await first;
    const second = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    // Assert
    expect(accepted.status).toBe(202);
    expect(accepted.json).toMatchObject({
      podUid: POD1,
      volume: DEVICE1,
      status: 'running',
      operation: `volume_unmount|${DEVICE1}|${POD1}|`,
    } satisfies Partial<UnmountRunningResponse>);
    expect(second.status).toBe(409);
    expect(ApiErrorBodySchema.parse(second.json).error.checks?.find((c) => !c.ok)?.name).toBe('no-operation-running');

    // Act + Assert: once released, the TearDown finishes and the mount is gone
    plugin.release();
    await waitFor(() => !f.harness.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), { what: 'the TearDown to finish' });
    expect(podMounts(await snapshot(f))).toEqual([]);
  });

  it('forces a TearDown stuck in backoff: the failure is reported as uncertain, the next request clears the backoff and unmounts', async () => {
    // Arrange
    const f = await withOrphan();
    plugin.failures = 1;

    // Act: the first TearDown fails (the mount becomes uncertain, the key backs off)
    const failed = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });
    const inBackoff = f.harness.vm.getPendingOperations().filter((op) => op.key.volumeName === DEVICE1);
    const retried = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    // Assert
    expect(failed.status).toBe(200);
    expect(UnmountResponseSchema.parse(failed.json)).toMatchObject({ outcome: 'uncertain' });
    expect(UnmountResponseSchema.parse(failed.json).error).toContain(SCRIPTED_TEARDOWN_ERROR);
    expect(inBackoff.map((op) => [op.operationName, op.pending, op.failures])).toEqual([['volume_unmount', false, 1]]);
    expect(retried.status).toBe(200);
    const body = UnmountResponseSchema.parse(retried.json);
    expect(body.outcome).toBe('unmounted');
    expect(body.checks.find((c) => c.name === 'no-operation-running')?.detail).toBe(
      'no operation is running; the failed volume_unmount in backoff (1 failure(s)) is retried now',
    );
    const after = await snapshot(f);
    expect(podMounts(after)).toEqual([]);
    expect(after.audit.map((a) => a.result)).toEqual(['failed', 'succeeded']);
  });

  it('answers waiting requests with 202 when the server closes', async () => {
    // Arrange
    const f = await withOrphan();
    plugin.hold();
    const pending = f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });
    await waitFor(() => f.harness.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), { what: 'the TearDown to start' });

    // Act
    const closed = f.server.close();
    const res = await pending;
    await closed;

    // Assert
    expect(res.status).toBe(202);
  });
  it.each([
    { name: 'succeeds', failures: 0, result: 'succeeded', message: null },
    { name: 'fails', failures: 1, result: 'failed', message: SCRIPTED_TEARDOWN_ERROR },
  ])('audits a TearDown still running at the answer as running, then its outcome when it $name', async ({ failures, result, message }) => {
    // Arrange
    const f = await withOrphan();
    plugin.hold();
    plugin.failures = failures;

    // Act: the answer goes out after 30 s of agent time, then the TearDown ends
    const pending = f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });
    await waitFor(() => f.harness.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), { what: 'the TearDown to start' });
    await f.harness.clock.advance(30_000);
    const accepted = await pending;
    const whileRunning = (await snapshot(f)).audit;
    plugin.release();
    await waitFor(() => !f.harness.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), { what: 'the TearDown to finish' });
    const after = (await snapshot(f)).audit;

    // Assert
    expect(accepted.status).toBe(202);
    const { checks } = UnmountRunningResponseSchema.parse(accepted.json);
    expect(whileRunning).toEqual([
      { time: f.harness.clock.now(), caller: 'test-client', groups: [], incidentId: null, reason: null, action: 'unmount', target: `${POD1}/${DEVICE1}`, checks, result: 'running', message: TEARDOWN_STILL_RUNNING_MESSAGE },
    ]);
    expect(after).toHaveLength(2);
    expect(after[1]).toMatchObject({ action: 'unmount', target: `${POD1}/${DEVICE1}`, checks, result });
    if (message === null) expect(after[1]?.message).toBeNull();
    else expect(after[1]?.message).toContain(message);
  });

  it('refuses when the live read of the pod source still finds the pod, though the cache and the desired state lost it', async () => {
    // Arrange
    const f = await withOrphan();
    f.runtime.podLookup = () => Promise.resolve({ presence: 'present', detail: 'pod default/pod1 (uid pod1uid) exists in the API server (read just now)', pod: { namespace: 'default', name: 'pod1' } });

    // Act
    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    // Assert
    expect(res.status).toBe(409);
    const error = ApiErrorBodySchema.parse(res.json).error;
    expect(error.code).toBe('conflict');
    expect(error.message).toBe(`pod ${POD1} still exists in its source: pod default/pod1 (uid pod1uid) exists in the API server (read just now)`);
    expect(error.checks?.filter((c) => !c.ok).map((c) => c.name)).toEqual(['pod-absent-from-source']);
    expect(f.runtime.podLookups).toBe(1);
    expect(plugin.counts.tearDown).toBe(0);
  });

  it('refuses while the source reports an error for the pod, naming it', async () => {
    const f = await withOrphan();
    f.runtime.setSourceErrors([{ file: 'pod1.yaml', message: 'pod1.yaml: document 0: spec.volumes: expected array' }]);

    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    expect(res.status).toBe(409);
    const error = ApiErrorBodySchema.parse(res.json).error;
    expect(error.checks?.find((c) => !c.ok)).toEqual({ name: 'source-no-error', ok: false, detail: 'pod1.yaml: pod1.yaml: document 0: spec.volumes: expected array' });
    expect(plugin.counts.tearDown).toBe(0);
  });

  it('clears a TearDown backoff through the rate limiter of retry: 429 once retries used the window, and the clear uses a slot', async () => {
    // Arrange: a failed TearDown in backoff, and 9 of the 10 retries of the window used
    const f = await withOrphan();
    plugin.failures = 1;
    expect((await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 })).status).toBe(200);
    for (let i = 0; i < 9; i++) await f.client.post('/api/v1/operations/retry', { volume: 'fake-plugin/none' });

    // Act: the unmount takes the last slot; then a retry and another unmount find none
    const cleared = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });
    const retry = await f.client.post('/api/v1/operations/retry', { volume: 'fake-plugin/none' });

    // Assert
    expect(cleared.status).toBe(200);
    expect(UnmountResponseSchema.parse(cleared.json).checks.find((c) => c.name === 'rate-limit')).toEqual({
      name: 'rate-limit',
      ok: true,
      detail: 'clearing the backoff of volume_unmount: within 10 retries per 10 s on this node',
    });
    expect(retry.status).toBe(429);
  });

  it('answers 429 with Retry-After and clears nothing when the retry window is used up', async () => {
    // Arrange
    const f = await withOrphan();
    plugin.failures = 1;
    await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });
    for (let i = 0; i < 10; i++) await f.client.post('/api/v1/operations/retry', { volume: 'fake-plugin/none' });

    // Act
    const res = await f.client.post('/api/v1/unmount', { podUid: POD1, volume: DEVICE1 });

    // Assert
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('10');
    expect(ApiErrorBodySchema.parse(res.json).error).toEqual({ code: 'rate-limited', message: 'too many retries: at most 10 per 10 s on this node; try again in 10 s' });
    expect(f.harness.vm.getPendingOperations().map((op) => [op.operationName, op.pending, op.failures])).toEqual([['volume_unmount', false, 1]]);
    const audited = (await snapshot(f)).audit.at(-1);
    expect(audited).toMatchObject({ action: 'unmount', result: 'refused' });
    expect(audited?.checks.at(-1)).toEqual({ name: 'rate-limit', ok: false, detail: 'too many retries: at most 10 per 10 s on this node; try again in 10 s' });
  });
});
