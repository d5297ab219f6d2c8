/**
 * An observe-mode node without a cluster, for the demo (`npm start`: `demo-observer`) and the
 * e2e stack (`e2e-observer`): a Kubernetes-protocol test server holding the node's pods and
 * events (the agent's real client talks to it over HTTP), a kubelet root dir left the way a
 * kubelet leaves it (agent/node/testing/observed-kubelet.ts: real tmpfs mounts as root in the
 * private mount namespace, stand-ins otherwise), and a VolumeScope agent in `--mode=observe`
 * reading them, with `--allow-orphan-cleanup` when real mounts are allowed (the cleanup needs the
 * kernel's mount table; with stand-ins the agent refuses the flag, and the dashboard shows the
 * cleanup as not available). Start it before the dashboard, which lists it as
 * an extra agent; stop it before the stack's teardown checks for leftover mounts.
 *
 * A directory left by an earlier run (a killed demo) is unmounted and removed first; anything
 * still mounted below it after that stops the start instead of being deleted.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { buildObservedKubeletRoot, observedMountPoints, putObservedApiObjects } from '../../agent/node/testing/observed-kubelet.ts';
import { unprivilegedMounterDirName } from '../../agent/node/node-agent.ts';
import { LinuxMounter, UnprivilegedMounter, type Mounter } from '../../lib/mount-utils/mounter.ts';
import { FakeApiServer } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { writeKubeconfigFile } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import { mountsAtOrBelow } from '../../lib/mount-utils/mount-table.ts';
import { childEnv, freePort, httpStatus, ManagedProcess, waitUntil } from './process.ts';
import { LOOPBACK } from './stack.ts';

export interface ObserverInfo {
  name: string;
  url: string;
  tokenFile: string;
  rootDir: string;
}

export interface Observer {
  info: ObserverInfo;
  /** Stops the agent and the API server and unmounts what the fixture left mounted. */
  stop(): Promise<void>;
}

export interface StartObserverOptions {
  name: string;
  repoRoot: string;
  baseDir: string;
  logDir: string;
  mountsAllowed: boolean;
  /** The agent's API port; default a free one. */
  port?: number;
}

export async function startObserver(opts: StartObserverOptions): Promise<Observer> {
  const dir = join(opts.baseDir, opts.name);
  const rootDir = join(dir, 'kubelet');
  const mounter: Mounter = opts.mountsAllowed ? new LinuxMounter() : new UnprivilegedMounter({ stateDir: join(rootDir, unprivilegedMounterDirName), systemMountInfoPath: null });
  await unmountFixture(rootDir, mounter);
  const left = mountsAtOrBelow(await mounter.list(), dir);
  if (left.length > 0) throw new Error(`${dir} still has mounts (${left.map((m) => m.mountPoint).join(', ')}): unmount them, then start again`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(rootDir, { recursive: true });
  await buildObservedKubeletRoot(rootDir, mounter);
  const api = await FakeApiServer.start({ token: 'e2e-observer-sa' });
  // The demo's backoff counts down from now; the e2e stack's too (its assertions do not read times).
  putObservedApiObjects(api, opts.name, { failedAt: Date.now() });
  const kubeconfig = await writeKubeconfigFile(join(dir, 'kubeconfig'), { server: api.url, token: 'e2e-observer-sa' });
  const port = opts.port ?? (await freePort());
  const tokenFile = join(dir, 'agent-token');
  const proc = ManagedProcess.start({
    name: `agent ${opts.name}`,
    args: [
      '--import',
      'tsx',
      join(opts.repoRoot, 'agent', 'main.ts'),
      '--mode=observe',
      '--node-name',
      opts.name,
      '--kubeconfig',
      kubeconfig,
      '--root-dir',
      rootDir,
      '--listen',
      `${LOOPBACK}:${String(port)}`,
      '--token-file',
      tokenFile,
      ...(opts.mountsAllowed ? ['--allow-orphan-cleanup'] : []),
      '--observe-refresh-period=1s',
      `--allow-mount=${opts.mountsAllowed ? 'true' : 'false'}`,
    ],
    cwd: opts.repoRoot,
    env: childEnv(),
    logFile: join(opts.logDir, `agent-${opts.name}.log`),
  });
  const url = `http://${LOOPBACK}:${String(port)}`;
  await waitUntil(`agent ${opts.name} answers on ${url}/healthz`, async () => (await httpStatus(`${url}/healthz`)) === 200, { deadlineMs: 60_000, process: proc });
  return {
    info: { name: opts.name, url, tokenFile, rootDir },
    async stop() {
      await proc.stop(10_000);
      await api.close();
      await unmountFixture(rootDir, mounter);
    },
  };
}

/** Unmounts whichever of the fixture's mounts are still mounted (an orphan cleanup may have done one). */
async function unmountFixture(rootDir: string, mounter: Mounter): Promise<void> {
  for (const target of observedMountPoints(rootDir).reverse()) {
    if (await mounter.isMountPoint(target).catch(() => false)) await mounter.unmount(target);
  }
}
