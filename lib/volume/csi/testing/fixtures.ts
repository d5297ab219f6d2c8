/**
 * Test support for the CSI plugin: an in-memory object getter, spec and pod builders, a logger
 * that keeps its lines, and a per-test directory that is checked for leaked loop devices and
 * mounts before it is removed.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { makeTempDir } from '../../../mount-utils/testing/mount-test-env.ts';
import type { CSIDriver, CSIPersistentVolumeSource, Pod, Secret } from '../../k8s-types.ts';
import type { Logger } from '../../logger.ts';
import type { VolumeObjectGetter } from '../../object-getter.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from '../../spec.ts';
import type { CsiLoopProcess } from './csi-loop-process.ts';

export const DRIVER = 'csi-loop.volumescope.dev';

/** A VolumeObjectGetter over maps the test fills. */
export class FakeObjects implements VolumeObjectGetter {
  readonly csiDrivers = new Map<string, CSIDriver>();
  readonly secrets = new Map<string, Secret>();

  getConfigMap(): undefined {
    return undefined;
  }

  getSecret(namespace: string, name: string): Secret | undefined {
    return this.secrets.get(`${namespace}/${name}`);
  }

  getCSIDriver(name: string): CSIDriver | undefined {
    return this.csiDrivers.get(name);
  }

  addSecret(namespace: string, name: string, data: Record<string, string>): void {
    const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    this.secrets.set(`${namespace}/${name}`, { metadata: { name, namespace }, data: encoded });
  }

  addCSIDriver(name: string, spec: CSIDriver['spec']): void {
    this.csiDrivers.set(name, { metadata: { name }, spec });
  }
}

/** A PV-backed spec (bound to a PVC) of the csi-loop driver, 64Mi ext4 by default. */
export function pvSpec(volumeHandle: string, csi: Partial<CSIPersistentVolumeSource> = {}, capacity = '64Mi'): Spec {
  return specFromPersistentVolume({
    metadata: { name: `pv-${volumeHandle}` },
    spec: {
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: capacity },
      claimRef: { namespace: 'default', name: `claim-${volumeHandle}` },
      csi: { driver: DRIVER, volumeHandle, fsType: 'ext4', volumeAttributes: { capacity }, ...csi },
    },
  });
}

/** An inline ephemeral CSI volume. */
export function inlineSpec(name: string, driver = DRIVER): Spec {
  return specFromVolume({ name, csi: { driver, volumeAttributes: { size: '16Mi' } } });
}

export function pod(uid: string, name = `pod-${uid}`): Pod {
  return { metadata: { name, namespace: 'default', uid }, spec: { containers: [{ name: 'c' }] } };
}

/** A logger that keeps every line (message plus JSON of its fields). */
export class RecordingLogger implements Logger {
  readonly lines: string[] = [];
  debug(msg: string, fields?: Record<string, unknown>): void {
    this.add('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.add('info', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.add('warn', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.add('error', msg, fields);
  }
  private add(level: string, msg: string, fields?: Record<string, unknown>): void {
    this.lines.push(`${level} ${msg} ${fields === undefined ? '' : JSON.stringify(fields)}`);
  }
}

/** A fresh temporary directory for one test file (resolved, as mountinfo reports paths). */
export async function suiteDir(prefix: string): Promise<string> {
  return makeTempDir(prefix);
}

/** A fresh directory for one test below the suite directory. */
export async function testDir(suite: string, name: string): Promise<string> {
  const dir = join(suite, name);
  await mkdir(dir, { recursive: true });
  return dir;
}

/**
 * Ends a test file: stops the driver, cleans up anything a failed test leaked (never deleting
 * through a mount), then removes the suite directory.
 */
export async function finishSuite(driver: CsiLoopProcess | undefined, suite: string): Promise<void> {
  if (driver !== undefined) {
    await driver.stop();
    await driver.forceCleanUp(suite);
  }
  await rm(suite, { recursive: true, force: true });
}

/**
 * Returns what the test leaked (loop devices of the driver's images, mounts under `dir`), then
 * cleans that up (lazy unmount, loop detach) so one failure does not spill into the next test,
 * and removes `dir`. The caller asserts the returned lists are empty.
 */
export async function finishTestDir(driver: CsiLoopProcess, dir: string): Promise<{ loopDevices: string[]; mounts: string[] }> {
  const left = await driver.leftovers(dir);
  if (left.loopDevices.length > 0 || left.mounts.length > 0) await driver.forceCleanUp(dir);
  if ((await driver.leftovers(dir)).mounts.length === 0) await rm(dir, { recursive: true, force: true });
  return left;
}
