/**
 * The e2e stack's observe-mode node: a Kubernetes-protocol test server holding the node's pods
 * and events (the agent's real client talks to it over HTTP), a kubelet root dir left the way a
 * kubelet leaves it (agent/node/testing/observed-kubelet.ts, real tmpfs mounts as root in the
 * private mount namespace, stand-ins otherwise), and a VolumeScope agent in `--mode=observe`
 * with `--allow-orphan-cleanup` reading them. Started by the global setup before the dashboard,
 * which lists it as the agent `e2e-observer`.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { buildObservedKubeletRoot, observedMountPoints, putObservedApiObjects } from '../agent/node/testing/observed-kubelet.ts';
import { unprivilegedMounterDirName } from '../agent/node/node-agent.ts';
import { LinuxMounter, UnprivilegedMounter, type Mounter } from '../lib/mount-utils/mounter.ts';
import { FakeApiServer } from '../lib/sources/kube/testing/fake-apiserver.ts';
import { writeKubeconfigFile } from '../lib/sources/kube/testing/kubeconfig-file.ts';
import { childEnv, freePort, httpStatus, ManagedProcess, waitUntil } from '../scripts/demo/process.ts';
import { LOOPBACK } from '../scripts/demo/stack.ts';
import { E2E_OBSERVER, type NodeInfo } from './stack-info.ts';

export interface Observer {
  info: NodeInfo;
  /** Stops the agent and the API server and unmounts what the fixture left mounted. */
  stop(): Promise<void>;
}

export async function startObserver(opts: { repoRoot: string; baseDir: string; logDir: string; mountsAllowed: boolean }): Promise<Observer> {
  const dir = join(opts.baseDir, E2E_OBSERVER);
  const rootDir = join(dir, 'kubelet');
  await mkdir(rootDir, { recursive: true });
  const mounter: Mounter = opts.mountsAllowed ? new LinuxMounter() : new UnprivilegedMounter({ stateDir: join(rootDir, unprivilegedMounterDirName), systemMountInfoPath: null });
  await buildObservedKubeletRoot(rootDir, mounter);
  const api = await FakeApiServer.start({ token: 'e2e-observer-sa' });
  putObservedApiObjects(api, E2E_OBSERVER);
  const kubeconfig = await writeKubeconfigFile(join(dir, 'kubeconfig'), { server: api.url, token: 'e2e-observer-sa' });
  const port = await freePort();
  const tokenFile = join(dir, 'agent-token');
  const proc = ManagedProcess.start({
    name: `agent ${E2E_OBSERVER}`,
    args: [
      '--import',
      'tsx',
      join(opts.repoRoot, 'agent', 'main.ts'),
      '--mode=observe',
      '--node-name',
      E2E_OBSERVER,
      '--kubeconfig',
      kubeconfig,
      '--root-dir',
      rootDir,
      '--listen',
      `${LOOPBACK}:${String(port)}`,
      '--token-file',
      tokenFile,
      '--allow-orphan-cleanup',
      '--observe-refresh-period=1s',
      `--allow-mount=${opts.mountsAllowed ? 'true' : 'false'}`,
    ],
    cwd: opts.repoRoot,
    env: childEnv(),
    logFile: join(opts.logDir, `agent-${E2E_OBSERVER}.log`),
  });
  const url = `http://${LOOPBACK}:${String(port)}`;
  await waitUntil(`agent ${E2E_OBSERVER} answers on ${url}/healthz`, async () => (await httpStatus(`${url}/healthz`)) === 200, { deadlineMs: 60_000, process: proc });
  return {
    info: { name: E2E_OBSERVER, url, tokenFile, rootDir, manifestDir: '' },
    async stop() {
      await proc.stop(10_000);
      await api.close();
      for (const target of observedMountPoints(rootDir).reverse()) {
        if (await mounter.isMountPoint(target).catch(() => false)) await mounter.unmount(target);
      }
    },
  };
}
