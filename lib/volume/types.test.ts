import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  csiVolumeName,
  escapePluginName,
  isInvalidIdentifierError,
  nodeName,
  pluginName,
  podUID,
  splitUniqueName,
  uniquePodName,
  uniqueVolumeName,
  uniqueVolumeNameFromPlugin,
  uniqueVolumeNameWithPod,
  unescapePluginName,
  volumeSpecName,
  type NodeName,
  type UniqueVolumeName,
} from './types.ts';

/** A function that only accepts a NodeName, like every engine API that names this node. */
function acceptsNodeName(name: NodeName): string {
  return name;
}

describe('branded identifiers (type level, checked by `npm run typecheck`)', () => {
  it('accepts only NodeName values where a NodeName is expected', () => {
    // Arrange
    const plain = 'mynodename';
    const host: string = hostname();
    const volume: UniqueVolumeName = uniqueVolumeName('fake-plugin/fake-device1');

    // Act
    const results = [
      acceptsNodeName(nodeName(plain)),
      // @ts-expect-error -- a plain string literal is not a NodeName.
      acceptsNodeName('mynodename'),
      // @ts-expect-error -- a string variable is not a NodeName.
      acceptsNodeName(plain),
      // @ts-expect-error -- the host name is a string, not the Node object's name.
      acceptsNodeName(host),
      // @ts-expect-error -- another branded identifier is not a NodeName either.
      acceptsNodeName(volume),
    ];
    // @ts-expect-error -- a NodeName variable cannot be assigned a plain string.
    const assigned: NodeName = plain;

    // Assert: at run time the brands are plain strings.
    expect(results).toEqual(['mynodename', 'mynodename', 'mynodename', host, 'fake-plugin/fake-device1']);
    expect(assigned).toBe('mynodename');
  });
});

describe('identifier constructors', () => {
  it.each([
    { kind: 'NodeName', make: nodeName },
    { kind: 'PodUID', make: podUID },
    { kind: 'PluginName', make: pluginName },
    { kind: 'VolumeSpecName', make: volumeSpecName },
    { kind: 'UniquePodName', make: uniquePodName },
    { kind: 'UniqueVolumeName', make: uniqueVolumeName },
  ])('$kind rejects empty values and NUL bytes and keeps others unchanged', ({ kind, make }) => {
    // Arrange
    const attempt = (value: string): unknown => {
      try {
        return make(value);
      } catch (err) {
        return err;
      }
    };

    // Act
    const empty = attempt('');
    const nul = attempt('a\0b');
    const ok = attempt('x/y~z');

    // Assert
    expect(isInvalidIdentifierError(empty)).toBe(true);
    expect(empty instanceof Error ? empty.message : '').toBe(`invalid ${kind} "": must not be empty`);
    expect(isInvalidIdentifierError(nul)).toBe(true);
    expect(nul instanceof Error ? nul.message : '').toBe(`invalid ${kind} "a\\u0000b": must not contain NUL`);
    expect(ok).toBe('x/y~z');
  });
});

describe('unique volume names', () => {
  it.each([
    {
      name: 'an attachable or device-mountable plugin names the volume <plugin>/<volume>',
      build: () => uniqueVolumeNameFromPlugin(pluginName('fake-plugin'), 'fake-device1'),
      expected: 'fake-plugin/fake-device1',
    },
    {
      name: 'a CSI volume is <kubernetes.io/csi>/<driver>^<handle>',
      build: () => uniqueVolumeNameFromPlugin(pluginName('kubernetes.io/csi'), csiVolumeName('ebs.csi.aws.com', 'vol-123')),
      expected: 'kubernetes.io/csi/ebs.csi.aws.com^vol-123',
    },
    {
      name: 'other plugins name the volume <plugin>/<podUID>-<specName>',
      build: () => uniqueVolumeNameWithPod(pluginName('kubernetes.io/empty-dir'), uniquePodName('pod1uid'), volumeSpecName('cache')),
      expected: 'kubernetes.io/empty-dir/pod1uid-cache',
    },
  ])('$name', ({ build, expected }) => {
    // Act
    const name = build();

    // Assert
    expect(name).toBe(expected);
  });

  it('gives per-pod names to two pods using the same non-attachable volume', () => {
    // Act
    const a = uniqueVolumeNameWithPod(pluginName('kubernetes.io/configmap'), uniquePodName('pod-a'), volumeSpecName('config'));
    const b = uniqueVolumeNameWithPod(pluginName('kubernetes.io/configmap'), uniquePodName('pod-b'), volumeSpecName('config'));

    // Assert
    expect([a, b]).toEqual(['kubernetes.io/configmap/pod-a-config', 'kubernetes.io/configmap/pod-b-config']);
  });

  it('formats the CSI plugin volume name as <driver>^<handle>', () => {
    // Act & Assert
    expect(csiVolumeName('hostpath.csi.k8s.io', 'abc/def')).toBe('hostpath.csi.k8s.io^abc/def');
  });
});

describe('splitUniqueName', () => {
  it.each([
    { input: 'kubernetes.io/csi/ebs.csi.aws.com^vol-123', pluginName: 'kubernetes.io/csi', volumeName: 'ebs.csi.aws.com^vol-123' },
    { input: 'kubernetes.io/gce-pd/pd-1', pluginName: 'kubernetes.io/gce-pd', volumeName: 'pd-1' },
    { input: 'kubernetes.io/csi/driver^handle/with/slashes', pluginName: 'kubernetes.io/csi', volumeName: 'driver^handle/with/slashes' },
    { input: 'fake-plugin/fake-device1', pluginName: 'fake-plugin', volumeName: 'fake-device1' },
  ])('splits $input', ({ input, pluginName: plugin, volumeName }) => {
    // Act
    const parts = splitUniqueName(uniqueVolumeName(input));

    // Assert
    expect(parts).toEqual({ pluginName: plugin, volumeName });
  });

  it('is the inverse of uniqueVolumeNameFromPlugin for CSI names', () => {
    // Arrange
    const name = uniqueVolumeNameFromPlugin(pluginName('kubernetes.io/csi'), csiVolumeName('ebs.csi.aws.com', 'vol-123'));

    // Act
    const { pluginName: plugin, volumeName } = splitUniqueName(name);

    // Assert
    expect(uniqueVolumeNameFromPlugin(plugin, volumeName)).toBe(name);
  });

  it('rejects a name without a plugin part', () => {
    // Arrange
    let thrown: unknown;

    // Act
    try {
      splitUniqueName(uniqueVolumeName('no-slash'));
    } catch (err) {
      thrown = err;
    }

    // Assert
    expect(isInvalidIdentifierError(thrown)).toBe(true);
    expect(thrown instanceof Error ? thrown.message : '').toBe('invalid UniqueVolumeName "no-slash": has no plugin part');
  });
});

describe('plugin directory names', () => {
  it.each([
    { plugin: 'kubernetes.io/csi', dir: 'kubernetes.io~csi' },
    { plugin: 'kubernetes.io/empty-dir', dir: 'kubernetes.io~empty-dir' },
    { plugin: 'fake-plugin', dir: 'fake-plugin' },
  ])('escapes $plugin as $dir and back', ({ plugin, dir }) => {
    // Act
    const escaped = escapePluginName(pluginName(plugin));
    const unescaped = unescapePluginName(dir);

    // Assert
    expect(escaped).toBe(dir);
    expect(unescaped).toBe(plugin);
  });
});
