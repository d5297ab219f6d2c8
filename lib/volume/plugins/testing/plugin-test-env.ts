/**
 * Test support for the in-tree plugins: a temporary kubelet root with a VolumeHost, the test
 * mounter (real mounts inside a private mount namespace when VOLUMESCOPE_MOUNT_NS=1, the
 * unprivileged stand-ins otherwise), a fake clock and an in-memory object getter. Never used
 * outside tests.
 */
import { lstat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock } from '../../../clock/fake-clock.ts';
import { cleanUpTempDir, makeTempDir, testMounter } from '../../../mount-utils/testing/mount-test-env.ts';
import type { Mounter } from '../../../mount-utils/mounter.ts';
import type { MountInfo } from '../../../mount-utils/mountinfo.ts';
import type { ConfigMap, CSIDriver, Pod, Secret, Volume } from '../../k8s-types.ts';
import type { VolumeObjectGetter } from '../../object-getter.ts';
import type { MounterArgs, VolumeHost, VolumePlugin } from '../../plugins.ts';
import { nodeName, type PodUID } from '../../types.ts';
import type { VolumePluginDeps } from '../util/plugin-deps.ts';
import { mountTablePath } from '../util/volume-dir.ts';

/** Objects by `namespace/name`; pods by UID. */
export class FakeObjectGetter implements VolumeObjectGetter {
  readonly configMaps = new Map<string, ConfigMap>();
  readonly secrets = new Map<string, Secret>();
  readonly pods = new Map<string, Pod>();

  getConfigMap(namespace: string, name: string): ConfigMap | undefined {
    return this.configMaps.get(`${namespace}/${name}`);
  }

  getSecret(namespace: string, name: string): Secret | undefined {
    return this.secrets.get(`${namespace}/${name}`);
  }

  getCSIDriver(_name: string): CSIDriver | undefined {
    return undefined;
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.pods.get(uid);
  }

  putConfigMap(namespace: string, name: string, data: Record<string, string>, binaryData?: Record<string, string>): void {
    this.configMaps.set(`${namespace}/${name}`, { metadata: { name, namespace }, data, ...(binaryData === undefined ? {} : { binaryData }) });
  }

  putSecret(namespace: string, name: string, values: { data?: Record<string, string>; stringData?: Record<string, string> }): void {
    this.secrets.set(`${namespace}/${name}`, { metadata: { name, namespace }, ...values });
  }
}

export interface PluginTestEnv {
  /** The temporary directory holding everything. */
  dir: string;
  /** The kubelet root dir (`<dir>/kubelet`). */
  root: string;
  podsDir: string;
  mounter: Mounter;
  host: VolumeHost;
  clock: FakeClock;
  objects: FakeObjectGetter;
  deps: VolumePluginDeps;
  /** Removes the temporary directory; returns the mount points that leaked (a test expects none). */
  cleanUp(): Promise<string[]>;
}

export async function makePluginTestEnv(): Promise<PluginTestEnv> {
  const dir = await makeTempDir('volumescope-plugins-');
  const root = join(dir, 'kubelet');
  const podsDir = join(root, 'pods');
  await mkdir(podsDir, { recursive: true });
  const mounter = testMounter(join(dir, 'mounter-state'));
  const host: VolumeHost = {
    getPodsDir: () => podsDir,
    getPodVolumeDir: (uid, plugin, name) => join(podsDir, uid, 'volumes', plugin, name),
    getPodVolumeDeviceDir: (uid, plugin) => join(podsDir, uid, 'volumeDevices', plugin),
    getPluginDir: (plugin) => join(root, 'plugins', plugin),
    getNodeName: () => nodeName('node-a'),
  };
  const clock = new FakeClock();
  const objects = new FakeObjectGetter();
  const deps: VolumePluginDeps = { mounter, objects, clock, nodeAllocatable: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi' } };
  return { dir, root, podsDir, mounter, host, clock, objects, deps, cleanUp: () => cleanUpTempDir(dir, mounter) };
}

/** Builds a plugin and initialises it with the env's host. */
export function initPlugin<P extends VolumePlugin>(env: PluginTestEnv, plugin: P): P {
  plugin.init(env.host);
  return plugin;
}

export const POD_UID = 'pod-uid-1' as PodUID;

/** A pod `ns/web` with UID {@link POD_UID}, one container `app`, and the given volumes. */
export function makePod(volumes: Volume[] = [], extra: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: { name: 'web', namespace: 'ns', uid: POD_UID, ...extra },
    spec: { containers: [{ name: 'app' }], volumes },
  };
}

/** MounterArgs with nothing set. */
export const noArgs: MounterArgs = { desiredSize: null, seLinuxLabel: '' };

/** Mount-table entries (read now) at `path` or below it. */
export async function mountsAtOrBelow(mounter: Mounter, path: string): Promise<MountInfo[]> {
  const at = (await mountTablePath(path)) ?? path;
  return (await mounter.list()).filter((e) => e.mountPoint === at || e.mountPoint.startsWith(`${at}/`));
}

/** Permission bits of `path` (symlinks not followed). */
export async function modeOf(path: string): Promise<number> {
  return (await lstat(path)).mode & 0o777;
}

/** True when something exists at `path` (a dangling symlink counts). */
export async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** Resolves with the rejection of `p`, failing when it fulfils. */
export async function rejectionOf(p: Promise<unknown>): Promise<Error> {
  const outcome = await p.then(
    () => null,
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  if (outcome === null) throw new Error('expected the promise to reject, but it fulfilled');
  return outcome;
}
