import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { FakeClock } from '../clock/fake-clock.ts';
import type { KubeSource } from './kube/index.ts';
import { ManifestSource } from './manifest/index.ts';
import { deriveManifestPodUID } from './manifest/pod-uid.ts';
import { makeTempDir, removeDir } from './manifest/testing/manifest-dir.ts';
import type { ObjectSource, ObjectSourceChange } from './source.ts';

const podYAML = (name: string, image: string) => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: app\n    image: ${image}\n`;
const configMapYAML = (name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: default\ndata:\n  k: ${value}\n`;

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A started manifest source seen only through the contract; only `resync()` rescans (fake clock, no periodic resync). */
async function manifestObjectSource(): Promise<{ dir: string; source: ObjectSource; changes: ObjectSourceChange[] }> {
  const dir = await makeTempDir();
  cleanups.push(() => removeDir(dir));
  const manifests = new ManifestSource({ dir, nodeName: 'node-a', clock: new FakeClock(), resyncIntervalMs: 0 });
  cleanups.push(() => manifests.stop());
  const source: ObjectSource = manifests;
  const changes: ObjectSourceChange[] = [];
  source.onChange((change) => changes.push(change));
  await manifests.start();
  return { dir, source, changes };
}

describe('ObjectSource', () => {
  it('is implemented by both sources', () => {
    expectTypeOf<ManifestSource>().toExtend<ObjectSource>();
    expectTypeOf<KubeSource>().toExtend<ObjectSource>();
  });

  it('lets a consumer follow a manifest source through the contract alone: pods, objects, errors and changes', async () => {
    // Arrange
    const { dir, source, changes } = await manifestObjectSource();
    const uid = deriveManifestPodUID('node-a', 'default', 'web');
    expect(source.isSynced()).toBe(true);
    expect(source.listPods()).toEqual([]);

    // Act: a pod and a config map appear, then the pod changes and a file breaks.
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'busybox:1'));
    await writeFile(join(dir, 'cm.yaml'), configMapYAML('settings', 'a'));
    await source.resync();
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'busybox:2'));
    await writeFile(join(dir, 'broken.yaml'), 'kind: [');
    await source.resync();

    // Assert
    expect(source.listPods().map((p) => p.metadata.uid)).toEqual([uid]);
    expect(source.getPodByUID(uid)?.spec.containers[0]?.image).toBe('busybox:2');
    expect(source.getConfigMap('default', 'settings')?.data).toEqual({ k: 'a' });
    expect(source.getConfigMap('default', 'missing')).toBeUndefined();
    expect(source.getPersistentVolume('pv-1')).toBeUndefined();
    expect(source.sourceErrors().map((e) => e.file)).toEqual(['broken.yaml']);
    expect(changes.some((c) => c.objectsChanged)).toBe(true);
    expect(changes.at(-1)?.pods.updated).toEqual([uid]);
  });
});
