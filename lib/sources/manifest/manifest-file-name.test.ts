import { describe, expect, it } from 'vitest';
import { isManifestFileName } from './manifest-file-name.ts';

describe('isManifestFileName', () => {
  it.each([
    { name: 'pods.yaml', manifest: true },
    { name: 'pods.yml', manifest: true },
    { name: 'list.json', manifest: true },
    { name: 'pods.txt', manifest: false },
    { name: 'README', manifest: false },
    { name: '.yaml', manifest: false },
    { name: '.hidden.yaml', manifest: false },
    { name: '..data', manifest: false },
    { name: '.#pods.yaml', manifest: false },
    { name: '.pods.yaml.swp', manifest: false },
    { name: 'pods.yaml~', manifest: false },
    { name: 'pods.yaml.swp', manifest: false },
    { name: 'pods.yaml.tmp', manifest: false },
    { name: 'pods.yaml___jb_tmp___', manifest: false },
    { name: '#pods.yaml#', manifest: false },
    { name: '~pods.yaml', manifest: false },
    { name: 'PODS.YAML', manifest: false },
    { name: 'sub/pods.yaml', manifest: false },
  ])('treats $name as a manifest file: $manifest', ({ name, manifest }) => {
    expect(isManifestFileName(name)).toBe(manifest);
  });
});
