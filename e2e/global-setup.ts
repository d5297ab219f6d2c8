/**
 * Playwright global setup: the stack every e2e test runs against, started with the demo's
 * orchestration code (scripts/demo/stack.ts) on free ports in a temporary directory:
 * the real CSI test driver, two real agents (`e2e-node-a`, `e2e-node-b`) and the dashboard
 * (`next start`, built first when the build is missing or stale).
 *
 * The tests learn the stack from VOLUMESCOPE_E2E_STACK (JSON, see e2e/stack-info.ts); Playwright
 * starts its workers after this setup, so they inherit it. Processes belong to this (the runner)
 * process, so the tests ask a small control server here to restart an agent.
 *
 * The returned teardown removes the pods, waits until the agents have unmounted everything, stops
 * the processes and FAILS the run if anything stayed mounted (or a loop device stayed attached).
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDashboardBuild } from '../scripts/dashboard-build.mjs';
import { configMap, csiDriverObject, secret, writeManifest } from '../scripts/demo/manifests.ts';
import { freePort, waitUntil } from '../scripts/demo/process.ts';
import { LOOPBACK, Stack, describeTeardown, mountsAllowedHere, teardownClean } from '../scripts/demo/stack.ts';
import { E2E_FRAME_ANCESTORS } from './e2e-build.mjs';
import { startObserver } from '../scripts/demo/observer.ts';
import { E2E_NAMESPACE, E2E_NODES, E2E_OBSERVER, STACK_ENV, type StackInfo } from './stack-info.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const ARTIFACTS = join(REPO_ROOT, 'e2e', 'artifacts');

function log(message: string): void {
  process.stdout.write(`e2e setup: ${message}\n`);
}

/** POST /agents/<name>/restart → 204 once the agent serves again (the stack's own restart). */
function controlServer(stack: Stack): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const m = /^\/agents\/([a-z0-9.-]+)\/restart$/.exec(req.url ?? '');
    if (req.method !== 'POST' || m?.[1] === undefined) {
      res.writeHead(404).end();
      return;
    }
    stack
      .agent(m[1])
      .restart()
      .then(
        () => res.writeHead(204).end(),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err instanceof Error ? err.message : String(err)),
      );
  });
  return new Promise((resolve) => {
    server.listen(0, LOOPBACK, () => {
      const address = server.address();
      resolve({ server, url: `http://${LOOPBACK}:${typeof address === 'object' && address !== null ? address.port : 0}` });
    });
  });
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  await rm(ARTIFACTS, { recursive: true, force: true });
  ensureDashboardBuild({ frameAncestors: E2E_FRAME_ANCESTORS, log });

  const baseDir = await realpath(await mkdtemp(join(tmpdir(), 'volumescope-e2e-')));
  const mountsAllowed = mountsAllowedHere();
  log(`${mountsAllowed ? 'real mounts (private mount namespace)' : 'unprivileged mode (stand-in mounts)'}; state in ${baseDir}`);
  const observer = await startObserver({ name: E2E_OBSERVER, repoRoot: REPO_ROOT, baseDir, logDir: join(ARTIFACTS, 'logs'), mountsAllowed });
  log(`observe-mode agent ${observer.info.name} on ${observer.info.url}`);
  const stack = await Stack.start({
    extraAgents: [observer.info],
    repoRoot: REPO_ROOT,
    baseDir,
    logDir: join(ARTIFACTS, 'logs'),
    nodes: await Promise.all(E2E_NODES.map(async (name) => ({ name, port: await freePort() }))),
    driverControlPort: await freePort(),
    driverNodeId: 'e2e-host',
    dashboardHost: LOOPBACK,
    dashboardPort: await freePort(),
    mountsAllowed,
    progress: log,
  });

  // Objects every test may use: a ConfigMap, a Secret and the CSIDriver object, on both nodes.
  for (const agent of stack.agents) {
    await writeManifest(agent.dirs.manifestDir, 'app-config.yaml', configMap(E2E_NAMESPACE, 'app-config', { 'app.properties': 'mode=e2e\n' }));
    await writeManifest(agent.dirs.manifestDir, 'app-tls.yaml', secret(E2E_NAMESPACE, 'app-tls', { 'tls.crt': '(e2e certificate)\n' }));
    await writeManifest(agent.dirs.manifestDir, 'csidriver.yaml', csiDriverObject());
  }
  // Ready means synced and the driver registered, so no test starts against a half-started node.
  for (const agent of stack.agents) {
    await waitUntil(
      `agent ${agent.name} is synced and has registered the CSI test driver`,
      async () => {
        const s = await agent.snapshot();
        return s.statesSynced && s.drivers.some((d) => d.registered);
      },
      { deadlineMs: 60_000, ...(agent.process === null ? {} : { process: agent.process }) },
    );
  }

  const control = await controlServer(stack);
  const info: StackInfo = {
    dashboardUrl: stack.dashboardUrl,
    controlUrl: control.url,
    driverUrl: stack.driver.controlUrl,
    baseDir,
    mountsAllowed,
    driverMode: stack.driver.mode,
    nodes: stack.agents.map((a) => ({ name: a.name, url: a.url, tokenFile: a.dirs.tokenFile, rootDir: a.dirs.rootDir, manifestDir: a.dirs.manifestDir })),
    observer: { ...observer.info, manifestDir: '' },
  };
  process.env[STACK_ENV] = JSON.stringify(info);
  log(`dashboard on ${stack.dashboardUrl}`);

  return async () => {
    await new Promise<void>((resolve) => control.server.close(() => { resolve(); }));
    await observer.stop();
    const report = await stack.teardown({ drainMs: 60_000 });
    log(`teardown: ${describeTeardown(report)}`);
    if (!report.drained || !teardownClean(report)) {
      throw new Error(`the e2e stack left state behind (${baseDir} kept for inspection):\n${describeTeardown(report)}`);
    }
    await rm(baseDir, { recursive: true, force: true });
  };
}
