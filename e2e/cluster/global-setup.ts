/**
 * Global setup of `npm run test:cluster` (vitest.cluster.config.ts): ONE real cluster per run
 * (scripts/cluster/cluster.ts), in `.volumescope/cluster-test/` (reset at every run; a checkout too
 * deep for the cluster's unix sockets there gets a short dir in the temp directory, stateDirFor; the
 * environment variable VOLUMESCOPE_CLUSTER_TEST_DIR, an absolute path, moves it anywhere), stopped in
 * the teardown in the cluster's own order (agents first, leftover mounts unmounted, then the rest).
 *
 * The tests get the cluster's facts through `inject('cluster')` (e2e/cluster/cluster-context.ts).
 * The processes belong to this (the main vitest) process, so a test restarts node agent-0, or
 * stops and starts node kubelet-0's kubelet, through a small control server here
 * (`POST /agent/restart[?kill9=1]`, `POST /kubelet/stop`, `POST /kubelet/start`; bearer token in
 * the facts).
 *
 * Node agent-0 is not waited for (`waitForNodeReady: false`): a test that needs it Ready waits
 * itself (waitForNodeReady in cluster-context.ts), so the other tests run whatever its state.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { HOST, componentVersion, startCluster, stateDirFor, type ClusterFacts } from '../../scripts/cluster/cluster.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const testDirFromEnv = process.env.VOLUMESCOPE_CLUSTER_TEST_DIR;
const stateDir = testDirFromEnv === undefined ? stateDirFor(join(REPO_ROOT, '.volumescope', 'cluster-test'), 'cluster-test') : { dir: testDirFromEnv, moved: false, note: undefined };
export const CLUSTER_TEST_STATE_DIR = stateDir.dir;

/** Where and how a test asks this process to restart agent-0 or to stop and start kubelet-0. */
export interface ClusterControl {
  readonly url: string;
  readonly token: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ClusterFacts;
    clusterControl: ClusterControl;
  }
}

const log = (line: string): void => {
  process.stdout.write(`cluster-test: ${line}\n`);
};

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = performance.now();
  if (stateDir.note !== undefined) log(stateDir.note);
  const cluster = await startCluster({ stateDir: CLUSTER_TEST_STATE_DIR, reset: true, waitForNodeReady: false, log });
  log(`cluster started in ${((performance.now() - started) / 1000).toFixed(1)} s (kube-apiserver ${componentVersion(cluster.facts.versions, 'kube-apiserver')})`);

  const token = randomBytes(16).toString('hex');
  const authorized = (header: string | undefined): boolean => {
    const want = Buffer.from(`Bearer ${token}`);
    const got = Buffer.from(header ?? '');
    return got.length === want.length && timingSafeEqual(got, want);
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    if (!authorized(req.headers.authorization)) {
      res.writeHead(401).end();
      return;
    }
    // The actions on the processes this process owns: agent-0's restart, kubelet-0's stop and start.
    const actions: Record<string, (() => Promise<unknown>) | undefined> = {
      '/agent/restart': () => cluster.restartAgent({ kill9: url.searchParams.get('kill9') === '1' }).then((exit) => ({ exit })),
      '/kubelet/stop': () => cluster.stopKubelet().then((exit) => ({ exit })),
      '/kubelet/start': () => cluster.startKubelet().then(() => ({})),
    };
    const action = req.method === 'POST' ? actions[url.pathname] : undefined;
    if (action === undefined) {
      res.writeHead(404).end();
      return;
    }
    action().then(
      (body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err instanceof Error ? err.message : String(err)),
    );
  });
  const controlUrl = await new Promise<string>((resolve) => {
    server.listen(0, HOST, () => {
      const address = server.address();
      resolve(`http://${HOST}:${typeof address === 'object' && address !== null ? address.port : 0}`);
    });
  });

  project.provide('cluster', cluster.facts);
  project.provide('clusterControl', { url: controlUrl, token });

  return async () => {
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
    const stopping = performance.now();
    await cluster.stop();
    log(`cluster stopped in ${((performance.now() - stopping) / 1000).toFixed(1)} s`);
  };
}
