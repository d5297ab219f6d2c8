import { afterEach, describe, expect, it } from 'vitest';
import { UnmountResponseSchema } from '../../lib/api/actions.ts';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { SnapshotSchema, type Snapshot } from '../../lib/api/snapshot.ts';
import { FakeVolumePlugin } from '../../lib/volume/testing/fake-volume-plugin.ts';
import type { Unmounter } from '../../lib/volume/plugins.ts';
import { EmptyNodeName, type PodUID } from '../../lib/volume/types.ts';
import { waitFor } from './testing/api-client.ts';
import { DEVICE1, mountPod1, POD1, startServer, type ServerFixture } from './testing/server-fixture.ts';
import type { UnmountStillRunningBody } from './unmount-volume.ts';

/** The fake plugin with a TearDown that can be held at a gate or made to fail. */
class ScriptedTearDownPlugin extends FakeVolumePlugin {
  /** TearDowns still to fail (each failure counts down). */
  failures = 0;
  private gate: Promise<void> | null = null;
  private open: () => void = () => undefined;

  /** Holds every TearDown until {@link release}. */
  hold(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }

  release(): void {
    this.open();
    this.gate = null;
  }

  override newUnmounter(name: string, podUID: PodUID): Unmounter {
    const inner = super.newUnmounter(name, podUID);
    return {
      getPath: () => inner.getPath(),
      tearDown: async () => {
        if (this.gate !== null) await this.gate;
        if (this.failures > 0) {
          this.failures--;
          throw new Error('unmount failed: target is busy');
        }
        await inner.tearDown();
      },
    };
  }
}

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
    f.harness.vm.dsw.deletePodFromVolume(POD1, DEVICE1);
    return f;
  }

  const snapshot = async (f: ServerFixture): Promise<Snapshot> => SnapshotSchema.parse((await f.client.get('/api/v1/snapshot')).json);
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
    expect(body.checks.map((c) => [c.name, c.ok])).toEqual([
      ['states-synced', true],
      ['reconstruction-done', true],
      ['pod-not-desired', true],
      ['volume-mounted', true],
      ['no-operation-running', true],
    ]);
    // Assert: the effect, and the audit entry in the next snapshot
    expect(plugin.counts.tearDown).toBe(1);
    expect(podMounts(after)).toEqual([]);
    expect(after.audit).toEqual([
      {
        time: f.harness.clock.now(),
        caller: 'test-client',
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
        f.runtime.synced = false;
      },
      failed: ['states-synced'],
      message: 'desired and actual states are not synced yet',
    },
    {
      name: 'an operation is running on the volume for the pod',
      arrange: (f: ServerFixture) => {
        f.harness.vm.pendingOperations.run(DEVICE1, POD1, EmptyNodeName, {
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
    expect(error.checks).toHaveLength(5);
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
    await waitFor(() => f.harness.vm.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), 'the TearDown to start');
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
    } satisfies Partial<UnmountStillRunningBody>);
    expect(second.status).toBe(409);
    expect(ApiErrorBodySchema.parse(second.json).error.checks?.find((c) => !c.ok)?.name).toBe('no-operation-running');

    // Act + Assert: once released, the TearDown finishes and the mount is gone
    plugin.release();
    await waitFor(() => !f.harness.vm.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), 'the TearDown to finish');
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
    expect(UnmountResponseSchema.parse(failed.json).error).toContain('unmount failed: target is busy');
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
    await waitFor(() => f.harness.vm.operationExecutor.isOperationPending(DEVICE1, POD1, EmptyNodeName), 'the TearDown to start');

    // Act
    const closed = f.server.close();
    const res = await pending;
    await closed;

    // Assert
    expect(res.status).toBe(202);
  });
});
