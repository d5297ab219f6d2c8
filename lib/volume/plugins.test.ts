import { describe, expect, it } from 'vitest';
import {
  isAttachableVolume,
  isDeviceMountableVolume,
  isPluginNotFoundError,
  VolumePluginMgr,
  type Attacher,
  type VolumeHost,
  type VolumePlugin,
} from './plugins.ts';
import { specFromPersistentVolume, specFromVolume, type Spec } from './spec.ts';
import { FakeFileVolumePlugin, FakeVolumePlugin } from './testing/fake-volume-plugin.ts';
import { nodeName } from './types.ts';
import { errorMessage } from './errors.ts';

const gceSpec = (): Spec => specFromVolume({ name: 'volume-name', gcePersistentDisk: { pdName: 'fake-device1' } });

/** The error `fn` throws, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('VolumePluginMgr lookups by spec', () => {
  it.each<{ name: string; plugins: () => VolumePlugin[]; spec: Spec | undefined; error: string }>([
    { name: 'the spec is missing', plugins: () => [new FakeVolumePlugin()], spec: undefined, error: 'could not find plugin because volume spec is nil' },
    { name: 'no plugin matches', plugins: () => [new FakeVolumePlugin({ canSupport: () => false })], spec: gceSpec(), error: 'no volume plugin matched' },
    { name: 'no plugin is registered', plugins: () => [], spec: gceSpec(), error: 'no volume plugin matched' },
    {
      name: 'several plugins match',
      plugins: () => [new FakeVolumePlugin(), new FakeFileVolumePlugin(), new FakeVolumePlugin({ name: 'third' })],
      spec: gceSpec(),
      error: 'multiple volume plugins matched: fake-plugin,fake-file-plugin,third',
    },
  ])('findPluginBySpec fails when $name', ({ plugins, spec, error }) => {
    // Arrange
    const mgr = new VolumePluginMgr(plugins(), null);

    // Act
    const err = thrown(() => mgr.findPluginBySpec(spec));

    // Assert
    expect(isPluginNotFoundError(err)).toBe(true);
    expect(errorMessage(err)).toBe(error);
  });

  it('findPluginBySpec returns the one plugin that claims the spec', () => {
    // Arrange
    const pd = new FakeVolumePlugin({ canSupport: (s) => s.volume?.gcePersistentDisk !== undefined });
    const other = new FakeVolumePlugin({ name: 'other', canSupport: (s) => s.persistentVolume !== undefined });
    const mgr = new VolumePluginMgr([pd, other], null);

    // Act
    const byInline = mgr.findPluginBySpec(gceSpec());
    const byPv = mgr.findPluginBySpec(specFromPersistentVolume({ metadata: { name: 'pv' }, spec: {} }));

    // Assert
    expect(byInline).toBe(pd);
    expect(byPv).toBe(other);
  });

  it.each([
    { name: 'an attachable plugin', plugin: () => new FakeVolumePlugin(), attachable: true, deviceMountable: true, mapper: true, expandable: true },
    { name: 'a plugin that cannot attach this spec', plugin: () => new FakeVolumePlugin({ nonAttachable: true }), attachable: false, deviceMountable: true, mapper: true, expandable: true },
    { name: 'a plain file plugin', plugin: () => new FakeFileVolumePlugin(), attachable: false, deviceMountable: false, mapper: false, expandable: false },
  ])('capability lookups by spec for $name return the plugin or null', ({ plugin, attachable, deviceMountable, mapper, expandable }) => {
    // Arrange
    const p = plugin();
    const mgr = new VolumePluginMgr([p], null);

    // Act
    const found = {
      attachable: mgr.findAttachablePluginBySpec(gceSpec()),
      deviceMountable: mgr.findDeviceMountablePluginBySpec(gceSpec()),
      mapper: mgr.findMapperPluginBySpec(gceSpec()),
      expandable: mgr.findNodeExpandablePluginBySpec(gceSpec()),
    };

    // Assert
    expect(found).toEqual({
      attachable: attachable ? p : null,
      deviceMountable: deviceMountable ? p : null,
      mapper: mapper ? p : null,
      expandable: expandable ? p : null,
    });
  });

  it('capability lookups by spec pass on the plugin lookup error', () => {
    // Arrange
    const mgr = new VolumePluginMgr([], null);

    // Act
    const errors = [
      thrown(() => mgr.findAttachablePluginBySpec(gceSpec())),
      thrown(() => mgr.findDeviceMountablePluginBySpec(gceSpec())),
      thrown(() => mgr.findMapperPluginBySpec(gceSpec())),
      thrown(() => mgr.findNodeExpandablePluginBySpec(gceSpec())),
    ];

    // Assert
    expect(errors.map(errorMessage)).toEqual(Array(4).fill('no volume plugin matched'));
  });
});

describe('VolumePluginMgr lookups by name', () => {
  it('findPluginByName fails for an unknown name', () => {
    // Arrange
    const mgr = new VolumePluginMgr([new FakeVolumePlugin()], null);

    // Act
    const err = thrown(() => mgr.findPluginByName('kubernetes.io/csi'));

    // Assert
    expect(isPluginNotFoundError(err)).toBe(true);
    expect(errorMessage(err)).toBe('no volume plugin matched name: kubernetes.io/csi');
  });

  it.each([
    { name: 'fake-plugin', attachable: true, deviceMountable: true, mapper: true, expandable: true },
    { name: 'fake-file-plugin', attachable: false, deviceMountable: false, mapper: false, expandable: false },
  ])('capability lookups by name for $name return the plugin or null', ({ name, attachable, deviceMountable, mapper, expandable }) => {
    // Arrange
    const fake = new FakeVolumePlugin({ nonAttachable: true });
    const file = new FakeFileVolumePlugin();
    const mgr = new VolumePluginMgr([fake, file], null);
    const p = mgr.findPluginByName(name);

    // Act
    const found = {
      attachable: mgr.findAttachablePluginByName(name),
      deviceMountable: mgr.findDeviceMountablePluginByName(name),
      mapper: mgr.findMapperPluginByName(name),
      expandable: mgr.findNodeExpandablePluginByName(name),
    };

    // Assert: by name, a plugin's type decides, not whether it can attach a given spec.
    expect(found).toEqual({
      attachable: attachable ? p : null,
      deviceMountable: deviceMountable ? p : null,
      mapper: mapper ? p : null,
      expandable: expandable ? p : null,
    });
  });
});

describe('VolumePluginMgr registration', () => {
  it('refuses a plugin name registered twice', () => {
    // Act
    const err = thrown(() => new VolumePluginMgr([new FakeVolumePlugin(), new FakeVolumePlugin()], null));

    // Assert
    expect(errorMessage(err)).toBe('volume plugin "fake-plugin" was registered more than once');
  });

  it('initializes each plugin with the host, and lists them in registration order', () => {
    // Arrange
    const host: VolumeHost = {
      getPodsDir: () => '/var/lib/kubelet/pods',
      getPodVolumeDir: (uid, plugin, name) => `/var/lib/kubelet/pods/${uid}/volumes/${plugin}/${name}`,
      getPodVolumeDeviceDir: (uid, plugin) => `/var/lib/kubelet/pods/${uid}/volumeDevices/${plugin}`,
      getPluginDir: (plugin) => `/var/lib/kubelet/plugins/${plugin}`,
      getNodeName: () => nodeName('mynodename'),
    };
    const fake = new FakeVolumePlugin();
    const file = new FakeFileVolumePlugin();

    // Act
    const mgr = new VolumePluginMgr([fake, file], host);
    const mounter = fake.newMounter(gceSpec(), { metadata: { name: 'pod1', uid: 'pod1uid' }, spec: { containers: [] } });

    // Assert
    expect(mgr.list()).toEqual([fake, file]);
    expect(mounter.getPath()).toBe('/var/lib/kubelet/pods/pod1uid/volumes/fake-plugin/volume-name');
  });
});

describe('isAttachableVolume / isDeviceMountableVolume', () => {
  class BrokenAttacherPlugin extends FakeVolumePlugin {
    override newAttacher(): Attacher {
      throw new Error('cannot create attacher');
    }
    override newDeviceMounter(): Attacher {
      throw new Error('cannot create device mounter');
    }
  }

  it.each([
    { name: 'an attachable plugin', plugins: () => [new FakeVolumePlugin()], attachable: true, deviceMountable: true },
    { name: 'a plugin that cannot attach the spec', plugins: () => [new FakeVolumePlugin({ nonAttachable: true })], attachable: false, deviceMountable: true },
    { name: 'a plain file plugin', plugins: () => [new FakeFileVolumePlugin()], attachable: false, deviceMountable: false },
    { name: 'a plugin whose attacher cannot be created', plugins: () => [new BrokenAttacherPlugin()], attachable: false, deviceMountable: false },
    { name: 'no matching plugin', plugins: () => [], attachable: false, deviceMountable: false },
  ])('classify a spec of $name', ({ plugins, attachable, deviceMountable }) => {
    // Arrange
    const mgr = new VolumePluginMgr(plugins(), null);

    // Act
    const result = [isAttachableVolume(gceSpec(), mgr), isDeviceMountableVolume(gceSpec(), mgr)];

    // Assert
    expect(result).toEqual([attachable, deviceMountable]);
  });
});
