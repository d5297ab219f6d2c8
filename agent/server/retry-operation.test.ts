import { afterEach, describe, expect, it } from 'vitest';
import { RetryOperationResponseSchema } from '../../lib/api/actions.ts';
import { ApiErrorBodySchema } from '../../lib/api/api-error.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import { FailOnSetupVolumeName } from '../../lib/volume/testing/fake-volume-plugin.ts';
import { uniqueVolumeName } from '../../lib/volume/types.ts';
import { gcePdVolume, makePod } from '../../lib/volumemanager/testing/harness.ts';
import { startServer, type ServerFixture } from './testing/server-fixture.ts';

const FAILING = uniqueVolumeName('fake-plugin/pd-fail');

describe('POST /api/v1/operations/retry', () => {
  let fx: ServerFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  /** A pod whose mount keeps failing in SetUp: a volume_mount entry in backoff for (pd-fail, "", ""). */
  async function withOperationInBackoff(): Promise<ServerFixture> {
    fx = await startServer();
    const { harness } = fx;
    harness.pods.add(makePod([gcePdVolume(FailOnSetupVolumeName, 'pd-fail')]));
    harness.start();
    await harness.until(() => harness.vm.getPendingOperations().some((op) => op.key.volumeName === FAILING && !op.pending && op.failures > 0));
    return fx;
  }

  it.each([
    { name: 'without a pod', body: { volume: FAILING } },
    { name: 'with the pod (the volume-level entry matches any pod)', body: { volume: FAILING, podUid: 'pod1uid' } },
  ])('clears the backoff of an operation in backoff and answers its key, $name', async ({ body }) => {
    const f = await withOperationInBackoff();

    const res = await f.client.post('/api/v1/operations/retry', body);

    expect(res.status).toBe(200);
    expect(RetryOperationResponseSchema.parse(res.json)).toEqual({ cleared: `volume_mount|${FAILING}||` });
    expect(f.harness.vm.getPendingOperations().filter((op) => op.key.volumeName === FAILING)).toEqual([]);
  });

  it('audits the retry with its checks in the next snapshot', async () => {
    const f = await withOperationInBackoff();

    await f.client.post('/api/v1/operations/retry', { volume: FAILING });
    const snapshot = parseSnapshot((await f.client.get('/api/v1/snapshot')).json);

    expect(snapshot.audit.at(-1)).toMatchObject({
      caller: 'test-client',
      action: 'retry',
      target: FAILING,
      result: 'succeeded',
      message: null,
    });
    expect(snapshot.audit.at(-1)?.checks.map((c) => [c.name, c.ok])).toEqual([
      ['rate-limit', true],
      ['operation-exists', true],
      ['operation-not-running', true],
    ]);
  });

  it('answers 404 when no operation matches, also right after a clear', async () => {
    const f = await withOperationInBackoff();

    const first = await f.client.post('/api/v1/operations/retry', { volume: FAILING });
    const again = await f.client.post('/api/v1/operations/retry', { volume: FAILING });
    const other = await f.client.post('/api/v1/operations/retry', { volume: 'fake-plugin/unknown' });

    expect(first.status).toBe(200);
    expect([again.status, other.status]).toEqual([404, 404]);
    expect(ApiErrorBodySchema.parse(other.json).error).toEqual({
      code: 'not-found',
      message: 'no operation for volume fake-plugin/unknown in the pending-operations table',
    });
  });

  it('answers 409 with the checks while the operation runs, and leaves it alone', async () => {
    // Arrange: the attach never returns until released
    fx = await startServer();
    const { harness, client } = fx;
    let release = (): void => undefined;
    harness.plugin.attachHook = () =>
      new Promise((resolve) => {
        release = () => {
          resolve('/dev/vdb-test');
        };
      });
    harness.pods.add(makePod([gcePdVolume()]));
    harness.start();
    const device = uniqueVolumeName('fake-plugin/fake-device1');
    await harness.until(() => harness.vm.getPendingOperations().some((op) => op.key.volumeName === device && op.pending));

    // Act
    const res = await client.post('/api/v1/operations/retry', { volume: device });
    const runningAfter = harness.vm.getPendingOperations().filter((op) => op.key.volumeName === device && op.pending);
    release();

    // Assert
    expect(res.status).toBe(409);
    const error = ApiErrorBodySchema.parse(res.json).error;
    expect(error.code).toBe('conflict');
    expect(error.message).toBe(`operation volume_attach|${device}||mynodename is running; only an operation in backoff can be retried`);
    expect(error.checks?.map((c) => [c.name, c.ok])).toEqual([
      ['rate-limit', true],
      ['operation-exists', true],
      ['operation-not-running', false],
    ]);
    expect(runningAfter).toHaveLength(1);
  });

  it('allows 10 retries per 10 s on the node, then answers 429 with Retry-After until the window moves on', async () => {
    // Arrange
    fx = await startServer();
    const { harness, client } = fx;
    const retry = () => client.post('/api/v1/operations/retry', { volume: 'fake-plugin/none' });

    // Act: ten within the window (none matches: 404), then the eleventh
    const within: number[] = [];
    for (let i = 0; i < 10; i++) within.push((await retry()).status);
    const limited = await retry();

    // Assert
    expect(within).toEqual(Array<number>(10).fill(404));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('10');
    expect(ApiErrorBodySchema.parse(limited.json).error).toEqual({
      code: 'rate-limited',
      message: 'too many retries: at most 10 per 10 s on this node; try again in 10 s',
    });

    // Act + Assert: the window slides on the agent's clock
    await harness.clock.advance(10_000);
    expect((await retry()).status).toBe(404);
    const audit = parseSnapshot((await client.get('/api/v1/snapshot')).json).audit;
    expect(audit.map((a) => a.result)).toEqual([...Array<string>(11).fill('refused'), 'refused']);
    expect(audit[10]?.checks).toEqual([
      { name: 'rate-limit', ok: false, detail: 'too many retries: at most 10 per 10 s on this node; try again in 10 s' },
    ]);
  });
});
