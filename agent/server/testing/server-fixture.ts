/**
 * Test support: an agent server on 127.0.0.1 (ephemeral port) over a {@link FakeAgentRuntime},
 * with the agent metrics wired into the volume manager as the process wiring does.
 */
import { Harness, gcePdVolume, makePod, type HarnessOptions } from '../../../lib/volumemanager/testing/harness.ts';
import { uniquePodName, uniqueVolumeName, type UniquePodName, type UniqueVolumeName } from '../../../lib/volume/types.ts';
import { createAgentServer, type AgentServer, type AgentServerOptions } from '../agent-server.ts';
import { staticTokenAuthenticator, type Authenticator } from '../authenticator.ts';
import { createAgentMetrics, type AgentMetrics } from '../metrics.ts';
import { ApiClient } from './api-client.ts';
import { FakeAgentRuntime } from './fake-agent-runtime.ts';

export const TEST_TOKEN = 'test-token-0123456789';

/** The harness's default pod and volume. */
export const POD1: UniquePodName = uniquePodName('pod1uid');
export const DEVICE1: UniqueVolumeName = uniqueVolumeName('fake-plugin/fake-device1');

export interface ServerFixture {
  harness: Harness;
  runtime: FakeAgentRuntime;
  metrics: AgentMetrics;
  server: AgentServer;
  client: ApiClient;
  baseUrl: string;
  /** Closes the server, then the harness. */
  close(): Promise<void>;
}

export interface FixtureOptions {
  harness?: HarnessOptions;
  server?: Partial<Omit<AgentServerOptions, 'runtime' | 'metrics' | 'authenticator'>>;
  /** Default: the static {@link TEST_TOKEN}, caller `test-client` (the fixture's client sends it). */
  authenticator?: Authenticator;
}

/** Starts a server (the volume manager is not started: call `harness.start()` or {@link mountPod1}). */
export async function startServer(options: FixtureOptions = {}): Promise<ServerFixture> {
  const metrics = createAgentMetrics();
  const harness = new Harness({ ...options.harness, metrics, onOperationRecord: metrics.onOperationRecord });
  const runtime = new FakeAgentRuntime(harness);
  const server = createAgentServer({
    runtime,
    authenticator: options.authenticator ?? staticTokenAuthenticator(TEST_TOKEN, { name: 'test-client' }),
    metrics,
    // Reads are served from the last build and rebuild only when the pacing allows it
    // (SnapshotFeed.publishIfDue); with no minimum interval on the fake clock, a read after a
    // change sees it, as the tests expect. The pacing itself: agent-server.test.ts, snapshot-feed.test.ts.
    minRebuildIntervalMs: 0,
    ...options.server,
  });
  const { host, port } = await server.listen('127.0.0.1', 0);
  const baseUrl = `http://${host}:${port}`;
  return {
    harness,
    runtime,
    metrics,
    server,
    client: new ApiClient(baseUrl, TEST_TOKEN),
    baseUrl,
    close: async () => {
      await server.close();
      await harness.close();
    },
  };
}

/** Starts the volume manager with pod1 using the default GCE PD and waits (fake time) until it is mounted and the states are synced. */
export async function mountPod1(fixture: ServerFixture): Promise<void> {
  const { harness } = fixture;
  harness.pods.add(makePod([gcePdVolume()]));
  harness.start();
  await harness.until(() => harness.asw.getMountedVolumes().length === 1 && harness.vm.reconcilerStatesHasBeenSynced());
}
