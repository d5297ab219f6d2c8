import { execFileSync } from 'node:child_process';
import { mkdir, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { FakeClock } from '../../clock/fake-clock.ts';
import { isManifestDirError, isManifestSourceStateError } from './errors.ts';
import { ManifestSource } from './manifest-source.ts';
import type { ManifestChange, ManifestSourceOptions } from './manifest-source.ts';
import { deriveManifestPodUID } from './pod-uid.ts';
import { makeTempDir, removeDir, writeAtomically } from './testing/manifest-dir.ts';
import { RecordingLogger } from '../../volume/testing/recording-logger.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';

// Watcher tests on a real temporary directory. Deadlines are generous (2 s) so a loaded machine
// does not fail them; the observed latency is printed, and the 100 ms target is checked by eye
// (and by the debounce test on a fake clock), not by a timed assertion.
const deadlineMs = 2000;

const podYAML = (name: string, image = 'busybox') =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: app\n    image: ${image}\n`;
const brokenPodYAML = (name: string) => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers: []\n`;
const uidOf = (name: string) => deriveManifestPodUID('node-a', 'default', name);
const imageOf = (source: ManifestSource, name: string) => source.getPodByUID(uidOf(name))?.spec.containers[0]?.image;

/** Runs `wait` and logs how long the change took to take effect (informational). */
async function reportLatency(what: string, wait: () => Promise<unknown>): Promise<void> {
  const start = realClock.monotonic();
  await wait();
  console.info(`[manifest-source] ${what} took effect after ${(realClock.monotonic() - start).toFixed(1)} ms`);
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function tempDir(): Promise<string> {
  const dir = await makeTempDir();
  cleanups.push(() => removeDir(dir));
  return dir;
}

/** A source on `dir` for node-a with the real clock, recording its logs and changes. */
function newSource(dir: string, options: Partial<ManifestSourceOptions> = {}) {
  const logger = new RecordingLogger();
  const source = new ManifestSource({ dir, nodeName: 'node-a', clock: realClock, logger, ...options });
  const changes: ManifestChange[] = [];
  source.onChange((change) => changes.push(change));
  cleanups.push(() => source.stop());
  return { source, logger, changes };
}

describe('ManifestSource start', () => {
  it('loads the manifests present at start, ignoring other entries, and is synced when start resolves', async () => {
    // Arrange
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    await writeFile(join(dir, 'db.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'db' }, spec: { containers: [{ name: 'app' }] } }));
    await writeFile(join(dir, '.hidden.yaml'), podYAML('hidden'));
    await writeFile(join(dir, 'notes.txt'), podYAML('notes'));
    await writeFile(join(dir, 'web.yaml~'), podYAML('backup'));
    await mkdir(join(dir, 'sub.yaml'));
    const { source, changes } = newSource(dir);

    // Act
    expect(source.isSynced()).toBe(false);
    await source.start();

    // Assert
    expect(source.isSynced()).toBe(true);
    expect(source.listPods().map((p) => p.metadata.name)).toEqual(['db', 'web']);
    expect(source.sourceErrors()).toEqual([]);
    expect(changes).toEqual([{ generation: 1, pods: { added: [uidOf('db'), uidOf('web')], updated: [], removed: [] }, objectsChanged: false, errorsChanged: false }]);
  });

  it('serves every kind through its getter', async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, 'objects.yaml'),
      [
        'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-1}\nspec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], csi: {driver: d.example.com, volumeHandle: h}}\n',
        'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: claim-1, namespace: prod}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n',
        'apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {p: cA==}\n',
        'apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d.example.com}\nspec: {attachRequired: false}\n',
      ].join('---\n'),
    );
    const { source } = newSource(dir);
    await source.start();
    expect(source.getPersistentVolume('pv-1')?.spec.csi?.volumeHandle).toBe('h');
    expect(source.getPersistentVolumeClaim('prod', 'claim-1')?.metadata.name).toBe('claim-1');
    expect(source.getPersistentVolumeClaim('default', 'claim-1')).toBeUndefined();
    expect(source.getConfigMap('default', 'cfg')?.data).toEqual({ a: 'b' });
    expect(source.getSecret('default', 'creds')?.data).toEqual({ p: 'cA==' });
    expect(source.getCSIDriver('d.example.com')?.spec.attachRequired).toBe(false);
  });

  it.each([
    { name: 'a missing directory', setup: (dir: string) => Promise.resolve(join(dir, 'missing')) },
    {
      name: 'a file instead of a directory',
      setup: async (dir: string) => {
        await writeFile(join(dir, 'file'), '');
        return join(dir, 'file');
      },
    },
  ])('rejects with a ManifestDirError for $name', async ({ setup }) => {
    const path = await setup(await tempDir());
    const { source } = newSource(path);
    const err: unknown = await source.start().catch((e: unknown) => e);
    expect(isManifestDirError(err)).toBe(true);
    expect(source.isSynced()).toBe(false);
  });

  it('refuses to start twice', async () => {
    const { source } = newSource(await tempDir());
    await source.start();
    const err: unknown = await source.start().catch((e: unknown) => e);
    expect(isManifestSourceStateError(err)).toBe(true);
  });
});

describe('ManifestSource watching', () => {
  it('adds the pods of a new file', async () => {
    const dir = await tempDir();
    const { source, changes } = newSource(dir);
    await source.start();

    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    await reportLatency('add', () => waitFor(() => source.getPodByUID(uidOf('web')) !== undefined, { what: 'pod added', timeoutMs: deadlineMs }));

    expect(changes.at(-1)?.pods).toEqual({ added: [uidOf('web')], updated: [], removed: [] });
  });

  it('updates a pod whose file changed', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'v1'));
    const { source, changes } = newSource(dir);
    await source.start();

    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'v2'));
    await reportLatency('change', () => waitFor(() => imageOf(source, 'web') === 'v2', { what: 'pod updated', timeoutMs: deadlineMs }));

    expect(changes.at(-1)?.pods).toEqual({ added: [], updated: [uidOf('web')], removed: [] });
  });

  it('removes the pods of a deleted file', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    const { source, changes } = newSource(dir);
    await source.start();

    await unlink(join(dir, 'web.yaml'));
    await reportLatency('delete', () => waitFor(() => source.listPods().length === 0, { what: 'pod removed', timeoutMs: deadlineMs }));

    expect(changes.at(-1)?.pods).toEqual({ added: [], updated: [], removed: [uidOf('web')] });
  });

  it('keeps the pod of a file that becomes invalid, reports the error, and clears it once fixed', async () => {
    // Arrange
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'v1'));
    const { source, logger, changes } = newSource(dir);
    await source.start();

    // Act: break the file.
    await writeFile(join(dir, 'web.yaml'), brokenPodYAML('web'));
    await reportLatency('invalid file', () => waitFor(() => source.sourceErrors().length > 0, { what: 'source error', timeoutMs: deadlineMs }));

    // Assert: the last valid version stays; the error and a log line say why.
    expect(imageOf(source, 'web')).toBe('v1');
    expect(source.sourceErrors()).toEqual([
      { file: 'web.yaml', message: 'web.yaml: document 0 (Pod default/web): spec.containers: must have at least one container' },
    ]);
    expect(logger.warnings()).toEqual([
      {
        level: 'warn',
        msg: 'manifest source error; keeping the last valid version of the file',
        fields: { file: 'web.yaml', error: source.sourceErrors()[0]?.message, keptObjects: 1 },
      },
    ]);
    expect(changes.flatMap((c) => c.pods.removed)).toEqual([]);

    // Act: fix it.
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'v2'));
    await reportLatency('fixed file', () => waitFor(() => source.sourceErrors().length === 0, { what: 'error cleared', timeoutMs: deadlineMs }));

    // Assert
    expect(imageOf(source, 'web')).toBe('v2');
  });

  it('ignores a new file that is invalid, apart from its error', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    const { source } = newSource(dir);
    await source.start();

    await writeFile(join(dir, 'bad.yaml'), 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n');
    await waitFor(() => source.sourceErrors().length > 0, { what: 'source error', timeoutMs: deadlineMs });

    expect(source.sourceErrors()).toEqual([
      {
        file: 'bad.yaml',
        message: 'bad.yaml: document 0 (Deployment d): kind "Deployment" is not supported (supported: Pod, PersistentVolume, PersistentVolumeClaim, ConfigMap, Secret, CSIDriver)',
      },
    ]);
    expect(source.listPods().map((p) => p.metadata.name)).toEqual(['web']);
  });

  it('applies an atomic save (temp file + rename) as an update, never as a removal', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'v1'));
    const { source, changes } = newSource(dir);
    await source.start();

    await writeAtomically(dir, 'web.yaml', podYAML('web', 'v2'));
    await reportLatency('atomic save', () => waitFor(() => imageOf(source, 'web') === 'v2', { what: 'pod updated', timeoutMs: deadlineMs }));

    expect(changes.slice(1).map((c) => c.pods)).toEqual([{ added: [], updated: [uidOf('web')], removed: [] }]);
    expect(source.sourceErrors()).toEqual([]);
  });

  it('picks up a ConfigMap volume style update (swapping the ..data symlink)', async () => {
    // Arrange: the layout the kubelet's atomic writer makes: web.yaml -> ..data/web.yaml,
    // ..data -> ..v1.
    const dir = await tempDir();
    await mkdir(join(dir, '..v1'));
    await writeFile(join(dir, '..v1', 'web.yaml'), podYAML('web', 'v1'));
    await symlink('..v1', join(dir, '..data'));
    await symlink(join('..data', 'web.yaml'), join(dir, 'web.yaml'));
    const { source } = newSource(dir);
    await source.start();
    expect(imageOf(source, 'web')).toBe('v1');

    // Act: new payload directory, new symlink, renamed over ..data.
    await mkdir(join(dir, '..v2'));
    await writeFile(join(dir, '..v2', 'web.yaml'), podYAML('web', 'v2'));
    await symlink('..v2', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));

    // Assert
    await reportLatency('symlink swap', () => waitFor(() => imageOf(source, 'web') === 'v2', { what: 'pod updated', timeoutMs: deadlineMs }));
  });

  it('gives a pod defined in two files to the first file and reports the second, until the first is deleted', async () => {
    // Arrange
    const dir = await tempDir();
    await writeFile(join(dir, 'a.yaml'), podYAML('web', 'from-a'));
    const { source } = newSource(dir);
    await source.start();

    // Act
    await writeFile(join(dir, 'b.yaml'), podYAML('web', 'from-b'));
    await waitFor(() => source.sourceErrors().length > 0, { what: 'duplicate error', timeoutMs: deadlineMs });

    // Assert
    expect(imageOf(source, 'web')).toBe('from-a');
    expect(source.sourceErrors()).toEqual([
      { file: 'b.yaml', message: 'b.yaml: document 0 (Pod default/web): ignored: a.yaml (document 0) already defines it' },
    ]);

    // Act: the winner goes away, so the other definition takes over.
    await unlink(join(dir, 'a.yaml'));
    await waitFor(() => imageOf(source, 'web') === 'from-b', { what: 'b.yaml takes over', timeoutMs: deadlineMs });
    expect(source.sourceErrors()).toEqual([]);
  });

  it('keeps the last valid version of a file that cannot be read (here: grown past the size limit)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web', 'v1'));
    const { source } = newSource(dir, { maxFileBytes: 1000 });
    await source.start();

    await writeFile(join(dir, 'web.yaml'), `${podYAML('web', 'v2')}# ${'x'.repeat(1000)}\n`);
    await waitFor(() => source.sourceErrors().length > 0, { what: 'source error', timeoutMs: deadlineMs });

    expect(imageOf(source, 'web')).toBe('v1');
    expect(source.sourceErrors()[0]?.message).toMatch(/^web\.yaml: is \d+ bytes, larger than the limit of 1000$/);
  });
});

describe('ManifestSource entries that are not manifests to read', () => {
  it('reports a FIFO named like a manifest as an error naming it, without blocking the scan, and loads the other files', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    execFileSync('mkfifo', [join(dir, 'pipe.yaml')]);
    const { source } = newSource(dir);

    await source.start();

    expect(source.listPods().map((p) => p.metadata.name)).toEqual(['web']);
    expect(source.sourceErrors()).toEqual([
      { file: 'pipe.yaml', message: 'pipe.yaml: is not a regular file (a FIFO); manifests are read from regular files only' },
    ]);
  });

  it('reports a symlink to a character device as an error naming the link', async () => {
    const dir = await tempDir();
    await symlink('/dev/zero', join(dir, 'zero.yaml'));
    const { source } = newSource(dir);

    await source.start();

    expect(source.sourceErrors().map((e) => e.message)).toEqual(['zero.yaml: is not a regular file (a character device); manifests are read from regular files only']);
  });

  it('reports a file that is not UTF-8 as an error naming it', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'latin1.yaml'), Buffer.concat([Buffer.from(podYAML('web')), Buffer.from('# caf\xe9\n', 'latin1')]));
    const { source } = newSource(dir);

    await source.start();

    expect(source.listPods()).toEqual([]);
    expect(source.sourceErrors().map((e) => e.message)).toEqual(['latin1.yaml: is not UTF-8 text (manifests are YAML or JSON in UTF-8)']);
  });

  it('refuses YAML over its own limit (the event loop parses it) while the same size of JSON is read', async () => {
    const dir = await tempDir();
    const padding = 'x'.repeat(3000);
    await writeFile(join(dir, 'big.yaml'), `${podYAML('yaml-pod')}# ${padding}\n`);
    await writeFile(join(dir, 'big.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'json-pod', annotations: { padding } }, spec: { containers: [{ name: 'app' }] } }));
    const { source } = newSource(dir, { maxFileBytes: 10_000, maxYamlFileBytes: 2000 });

    await source.start();

    expect(source.listPods().map((p) => p.metadata.name)).toEqual(['json-pod']);
    expect(source.sourceErrors().map((e) => e.message)).toEqual([expect.stringMatching(/^big\.yaml: is \d+ bytes, larger than the limit of 2000 for YAML \(JSON files may have up to 10000\)$/)]);
  });
});

describe('ManifestSource directory and lifecycle', () => {
  it('keeps everything and reports file "." while the directory is gone, and recovers when it is back', async () => {
    // Arrange
    const parent = await tempDir();
    const dir = join(parent, 'manifests');
    await mkdir(dir);
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    const { source } = newSource(dir);
    await source.start();

    // Act: move the directory away and rescan explicitly (no watcher timing involved).
    await rename(dir, join(parent, 'elsewhere'));
    await source.resync();

    // Assert
    expect(source.listPods().map((p) => p.metadata.name)).toEqual(['web']);
    expect(source.sourceErrors().map((e) => e.file)).toEqual(['.']);

    // Act + Assert: back again.
    await rename(join(parent, 'elsewhere'), dir);
    await source.resync();
    expect(source.sourceErrors()).toEqual([]);
    expect(source.listPods().map((p) => p.metadata.name)).toEqual(['web']);
  });

  it('publishes nothing after stop', async () => {
    const dir = await tempDir();
    const { source, changes } = newSource(dir);
    await source.start();
    await source.stop();

    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    await source.resync();

    expect(source.listPods()).toEqual([]);
    expect(changes).toEqual([]);
    expect(source.generation).toBe(0);
  });

  it('keeps notifying other listeners when one throws', async () => {
    const dir = await tempDir();
    const { source, logger } = newSource(dir);
    source.onChange(() => {
      throw new Error('listener bug');
    });
    const seen: number[] = [];
    const unsubscribe = source.onChange((c) => seen.push(c.generation));
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));

    await source.start();
    unsubscribe();
    await writeFile(join(dir, 'db.yaml'), podYAML('db'));
    await source.resync();

    expect(seen).toEqual([1]);
    expect(source.generation).toBe(2);
    expect(logger.warnings().map((e) => e.msg)).toEqual(['manifest source change listener failed', 'manifest source change listener failed']);
  });
});

describe('ManifestSource timing on a fake clock', () => {
  it('applies a burst of writes as one change when the debounce window ends, not before', async () => {
    // Arrange
    const dir = await tempDir();
    const clock = new FakeClock();
    const { source, changes } = newSource(dir, { clock, debounceMs: 50, resyncIntervalMs: 0 });
    await source.start();

    // Act: three files at once; wait until the watcher has armed the debounce timer.
    await Promise.all(['a', 'b', 'c'].map((name) => writeFile(join(dir, `${name}.yaml`), podYAML(name))));
    await waitFor(() => clock.pendingTimers() === 1, { what: 'debounce timer armed', timeoutMs: deadlineMs });
    await clock.advance(49);

    // Assert: nothing yet, the timer is still pending.
    expect(clock.pendingTimers()).toBe(1);
    expect(source.generation).toBe(0);

    // Act: the window ends.
    await clock.advance(1);
    await waitFor(() => source.generation === 1, { what: 'burst applied', timeoutMs: deadlineMs });

    // Assert: one change with all three pods.
    expect(changes).toHaveLength(1);
    expect(changes[0]?.pods.added).toEqual([uidOf('a'), uidOf('b'), uidOf('c')]);
  });

  it('rescans on the resync period even without file events', async () => {
    // Arrange: a debounce far longer than the resync period, so only the resync can apply it.
    const dir = await tempDir();
    const clock = new FakeClock();
    const { source } = newSource(dir, { clock, debounceMs: 60_000, resyncIntervalMs: 1000 });
    await source.start();

    // Act
    await writeFile(join(dir, 'web.yaml'), podYAML('web'));
    await clock.advance(1000);

    // Assert
    await waitFor(() => source.listPods().length === 1, { what: 'resync applied', timeoutMs: deadlineMs });
  });
});
