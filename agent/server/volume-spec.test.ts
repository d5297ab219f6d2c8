import { describe, expect, it } from 'vitest';
import { attachmentName } from '../../lib/volume/csi/vol-data.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import type { PluginName, UniquePodName, UniqueVolumeName } from '../../lib/volume/types.ts';
import type { DesiredVolumeView } from '../../lib/volumemanager/index.ts';
import type { DesiredPodEntry } from './snapshot-items.ts';
import { csiVolumeFromUniqueName, desiredVolumeSpec, volumeSpecMatches, volumeSpecOf, type VolumeSpecInputs } from './volume-spec.ts';

const pod: Pod = {
  metadata: { name: 'web-0', namespace: 'default', uid: 'a' },
  spec: {
    volumes: [
      { name: 'host', hostPath: { path: '/var/log', type: 'Directory' } },
      { name: 'data', persistentVolumeClaim: { claimName: 'data-web-0', readOnly: true } },
      { name: 'inline', csi: { driver: 'loop.csi.volumescope.dev', volumeAttributes: { size: '1Mi' } } },
      { name: 'cfg', configMap: { name: 'app', items: [{ key: 'a', path: 'a.conf' }], defaultMode: 420 } },
      { name: 'scratch', emptyDir: {} },
    ],
    initContainers: [{ name: 'init', volumeMounts: [{ name: 'data', mountPath: '/seed' }] }],
    containers: [
      { name: 'app', volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true, subPath: 'app' }, { name: 'host', mountPath: '/logs' }] },
      { name: 'side', volumeMounts: [{ name: 'host', mountPath: '/l', readOnly: false }] },
    ],
  },
};
const inputs = (over: Partial<VolumeSpecInputs>): VolumeSpecInputs => ({
  outerVolumeSpecName: 'host',
  innerVolumeSpecName: 'host',
  uniqueVolumeName: 'kubernetes.io/host-path/a-host',
  pluginName: 'kubernetes.io/host-path',
  attachable: false,
  nodeName: 'node-0',
  ...over,
});

describe('volumeSpecOf', () => {
  it('shows a hostPath source as written, with every container mount of it', () => {
    expect(volumeSpecOf(pod, inputs({}))).toEqual({
      sourceType: 'hostPath',
      source: [
        { path: 'path', value: '/var/log' },
        { path: 'type', value: 'Directory' },
      ],
      mounts: [
        { container: 'app', mountPath: '/logs', readOnly: false },
        { container: 'side', mountPath: '/l', readOnly: false },
      ],
    });
  });

  it('follows a claim to its PV, the CSI driver and the VolumeAttachment of this node when the driver requires attach', () => {
    const spec = volumeSpecOf(pod, inputs({ outerVolumeSpecName: 'data', innerVolumeSpecName: 'pv-1', uniqueVolumeName: 'kubernetes.io/csi/loop.csi^vol/1', pluginName: 'kubernetes.io/csi', attachable: true }));

    expect(spec).toEqual({
      sourceType: 'persistentVolumeClaim',
      source: [
        { path: 'claimName', value: 'data-web-0' },
        { path: 'readOnly', value: 'true' },
      ],
      mounts: [
        { container: 'init', mountPath: '/seed', readOnly: false },
        { container: 'app', mountPath: '/data', readOnly: true, subPath: 'app' },
      ],
      claimName: 'data-web-0',
      persistentVolumeName: 'pv-1',
      csiDriver: 'loop.csi',
      volumeAttachment: attachmentName('vol/1', 'loop.csi', 'node-0'),
    });
  });

  it('names no VolumeAttachment when the CSI driver does not require attach', () => {
    const spec = volumeSpecOf(pod, inputs({ outerVolumeSpecName: 'data', innerVolumeSpecName: 'pv-1', uniqueVolumeName: 'kubernetes.io/csi/loop.csi^vol-1', pluginName: 'kubernetes.io/csi', attachable: false }));

    expect(spec?.csiDriver).toBe('loop.csi');
    expect(spec).not.toHaveProperty('volumeAttachment');
  });

  it('an inline CSI volume names its driver and no VolumeAttachment', () => {
    const spec = volumeSpecOf(pod, inputs({ outerVolumeSpecName: 'inline', innerVolumeSpecName: 'inline', uniqueVolumeName: 'kubernetes.io/csi/a-inline', pluginName: 'kubernetes.io/csi', attachable: true }));

    expect(spec).toEqual({
      sourceType: 'csi',
      source: [
        { path: 'driver', value: 'loop.csi.volumescope.dev' },
        { path: 'volumeAttributes.size', value: '1Mi' },
      ],
      mounts: [],
      csiDriver: 'loop.csi.volumescope.dev',
    });
  });

  it('flattens nested arrays and keeps numbers in JSON; an empty source has no fields', () => {
    expect(volumeSpecOf(pod, inputs({ outerVolumeSpecName: 'cfg' }))?.source).toEqual([
      { path: 'name', value: 'app' },
      { path: 'items[0].key', value: 'a' },
      { path: 'items[0].path', value: 'a.conf' },
      { path: 'defaultMode', value: '420' },
    ]);
    expect(volumeSpecOf(pod, inputs({ outerVolumeSpecName: 'scratch' }))).toEqual({ sourceType: 'emptyDir', source: [], mounts: [] });
  });

  it('is undefined for a volume the pod spec does not list', () => {
    expect(volumeSpecOf(pod, inputs({ outerVolumeSpecName: 'gone' }))).toBeUndefined();
  });
});

describe('csiVolumeFromUniqueName', () => {
  it.each([
    ['kubernetes.io/csi/d^h', { driver: 'd', volumeHandle: 'h' }],
    ['kubernetes.io/csi/d^h^x/y', { driver: 'd', volumeHandle: 'h^x/y' }],
    ['kubernetes.io/csi/a-inline', null],
    ['kubernetes.io/csi/^h', null],
    ['kubernetes.io/csi/d^', null],
    ['kubernetes.io/host-path/d^h', null],
  ])('%s → %o', (name, expected) => {
    expect(csiVolumeFromUniqueName(name)).toEqual(expected);
  });
});

describe('desiredVolumeSpec', () => {
  const entry: DesiredPodEntry = { podName: 'a' as UniquePodName, pod, outerVolumeSpecName: 'host', innerVolumeSpecName: 'host', mountRequestTime: 1 };
  const view: DesiredVolumeView = {
    volumeName: 'kubernetes.io/host-path/a-host' as UniqueVolumeName,
    pluginName: 'kubernetes.io/host-path' as PluginName,
    pluginIsAttachable: false,
    pluginIsDeviceMountable: false,
    reportedInUse: false,
    desiredSizeLimit: null,
    persistentVolumeSize: null,
    seLinuxLabel: '',
    pods: [entry],
  };

  it('returns the same object for the same pod object, and a new one when an input changes', () => {
    const first = desiredVolumeSpec(view, entry, 'node-0');

    expect(desiredVolumeSpec(view, entry, 'node-0')).toBe(first);
    expect(desiredVolumeSpec(view, entry, 'node-1')).not.toBe(first);
  });

  it('matches an equal spec from another pod object, and not a changed one', () => {
    const spec = desiredVolumeSpec(view, entry, 'node-0');
    const copy: Pod = structuredClone(pod);
    const changed: Pod = { ...copy, spec: { ...copy.spec, volumes: [{ name: 'host', hostPath: { path: '/srv' } }] } };

    expect(volumeSpecMatches(spec, view, { ...entry, pod: copy }, 'node-0')).toBe(true);
    expect(volumeSpecMatches(spec, view, { ...entry, pod: changed }, 'node-0')).toBe(false);
    expect(volumeSpecMatches(undefined, view, { ...entry, pod: changed }, 'node-0')).toBe(false);
  });
});
