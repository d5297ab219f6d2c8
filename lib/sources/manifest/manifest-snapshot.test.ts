import { describe, expect, it } from 'vitest';
import { buildManifestSnapshot, diffManifestSnapshots, emptyManifestSnapshot, isEmptyDiff, namespacedKey } from './manifest-snapshot.ts';
import type { ManifestFileState } from './manifest-snapshot.ts';
import { parseManifestFile } from './parse-manifest-file.ts';
import { deriveManifestPodUID } from './pod-uid.ts';

const podYAML = (name: string, image = 'busybox', uid?: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}${uid === undefined ? '' : `, uid: ${uid}`}}\nspec: {containers: [{name: app, image: ${image}}]}\n`;
const configMapYAML = (name: string, value = 'x') => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {k: "${value}"}\n`;

/** A valid file state from YAML text (the parse must succeed). */
function validFile(file: string, ...docs: string[]): ManifestFileState {
  const { objects, errors } = parseManifestFile(file, docs.join('---\n'), 'node-a');
  expect(errors).toEqual([]);
  return { file, objects, errors: [] };
}

const uidOf = (name: string) => deriveManifestPodUID('node-a', 'default', name);

describe('buildManifestSnapshot', () => {
  it('indexes every object by its lookup key', () => {
    const snapshot = buildManifestSnapshot([validFile('a.yaml', podYAML('web'), configMapYAML('cfg'))]);
    expect([...snapshot.pods.keys()]).toEqual([uidOf('web')]);
    expect(snapshot.configMaps.get(namespacedKey('default', 'cfg'))?.data).toEqual({ k: 'x' });
    expect(snapshot.errors).toEqual([]);
  });

  it('lets the first file in code-unit order win a duplicate object and reports the other file', () => {
    // Arrange: given in reverse order, to show the order of the input does not matter.
    const files = [validFile('b.yaml', configMapYAML('other'), podYAML('web', 'from-b')), validFile('a.yaml', podYAML('web', 'from-a'))];

    // Act
    const snapshot = buildManifestSnapshot(files);

    // Assert
    expect(snapshot.pods.get(uidOf('web'))?.spec.containers[0]?.image).toBe('from-a');
    expect(snapshot.configMaps.has(namespacedKey('default', 'other'))).toBe(true);
    expect(snapshot.errors).toEqual([
      { file: 'b.yaml', message: 'b.yaml: document 1 (Pod default/web): ignored: a.yaml (document 0) already defines it' },
    ]);
  });

  it('compares file names by code unit, not by locale', () => {
    const snapshot = buildManifestSnapshot([validFile('a.yaml', podYAML('web', 'lower')), validFile('B.yaml', podYAML('web', 'upper'))]);
    expect(snapshot.pods.get(uidOf('web'))?.spec.containers[0]?.image).toBe('upper');
  });

  it('reports a pod whose uid another file already uses', () => {
    const uid = '0b6a3c2e-9f7d-4c1a-8e2b-1d3f5a7c9e0b';
    const snapshot = buildManifestSnapshot([validFile('a.yaml', podYAML('one', 'x', uid)), validFile('b.yaml', podYAML('two', 'x', uid))]);
    expect([...snapshot.pods.values()].map((p) => p.metadata.name)).toEqual(['one']);
    expect(snapshot.errors).toEqual([
      { file: 'b.yaml', message: `b.yaml: document 0 (Pod default/two): ignored: metadata.uid ${uid} is already used by Pod default/one in a.yaml (document 0)` },
    ]);
  });

  it('keeps serving the last valid objects of a file that is now invalid, and lists its errors', () => {
    const lastValid = validFile('a.yaml', podYAML('web'));
    const broken: ManifestFileState = { ...lastValid, errors: [{ file: 'a.yaml', message: 'a.yaml: document 0: invalid YAML: …' }] };
    const snapshot = buildManifestSnapshot([broken]);
    expect(snapshot.pods.has(uidOf('web'))).toBe(true);
    expect(snapshot.errors).toEqual(broken.errors);
  });

  it('lists directory errors before file errors', () => {
    const broken: ManifestFileState = { file: 'a.yaml', objects: [], errors: [{ file: 'a.yaml', message: 'a.yaml: x' }] };
    const snapshot = buildManifestSnapshot([broken], [{ file: '.', message: '.: unreadable' }]);
    expect(snapshot.errors.map((e) => e.file)).toEqual(['.', 'a.yaml']);
  });
});

describe('diffManifestSnapshots', () => {
  const base = buildManifestSnapshot([validFile('a.yaml', podYAML('web'), podYAML('db'), configMapYAML('cfg'))]);

  it.each([
    {
      name: 'a new pod is added',
      next: () => [validFile('a.yaml', podYAML('web'), podYAML('db'), configMapYAML('cfg')), validFile('b.yaml', podYAML('cache'))],
      pods: { added: [uidOf('cache')], updated: [], removed: [] },
      objectsChanged: false,
    },
    {
      name: 'a changed pod is updated',
      next: () => [validFile('a.yaml', podYAML('web', 'v2'), podYAML('db'), configMapYAML('cfg'))],
      pods: { added: [], updated: [uidOf('web')], removed: [] },
      objectsChanged: false,
    },
    {
      name: 'a missing pod is removed',
      next: () => [validFile('a.yaml', podYAML('web'), configMapYAML('cfg'))],
      pods: { added: [], updated: [], removed: [uidOf('db')] },
      objectsChanged: false,
    },
    {
      name: 'a changed ConfigMap changes objects only',
      next: () => [validFile('a.yaml', podYAML('web'), podYAML('db'), configMapYAML('cfg', 'y'))],
      pods: { added: [], updated: [], removed: [] },
      objectsChanged: true,
    },
  ])('reports that $name', ({ next, pods, objectsChanged }) => {
    const diff = diffManifestSnapshots(base, buildManifestSnapshot(next()));
    expect(diff).toEqual({ pods, objectsChanged, errorsChanged: false });
  });

  it('reports nothing for an equal snapshot built from a fresh parse', () => {
    const again = buildManifestSnapshot([validFile('a.yaml', podYAML('web'), podYAML('db'), configMapYAML('cfg'))]);
    expect(isEmptyDiff(diffManifestSnapshots(base, again))).toBe(true);
  });

  it('reports changed errors', () => {
    const withError = buildManifestSnapshot([], [{ file: '.', message: '.: unreadable' }]);
    expect(diffManifestSnapshots(emptyManifestSnapshot, withError)).toEqual({
      pods: { added: [], updated: [], removed: [] },
      objectsChanged: false,
      errorsChanged: true,
    });
  });
});
