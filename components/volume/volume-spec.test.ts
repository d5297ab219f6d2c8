import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { VolumeSpecSection } from './volume-spec.tsx';

const render = (view: Parameters<typeof VolumeSpecSection>[0]['view']): string => renderToStaticMarkup(createElement(VolumeSpecSection, { node: 'agent-0', view }));

describe('VolumeSpecSection', () => {
  it('shows the source as written, the mounts with mountPath and readOnly, and PVC → PV → VolumeAttachment with the CSI driver', () => {
    const html = render({
      pluginName: 'kubernetes.io/csi',
      attachable: true,
      pods: [
        {
          podUid: 'a',
          podName: 'default/web-0',
          volumeName: 'data',
          spec: {
            sourceType: 'persistentVolumeClaim',
            source: [{ path: 'claimName', value: 'data-web-0' }],
            mounts: [
              { container: 'app', mountPath: '/data', readOnly: true, subPath: 'app' },
              { container: 'init', mountPath: '/seed', readOnly: false },
            ],
            claimName: 'data-web-0',
            persistentVolumeName: 'pv-data',
            csiDriver: 'csi-loop.volumescope.dev',
            volumeAttachment: 'csi-0123',
          },
        },
      ],
    });

    expect(html).toContain('<dt>persistentVolumeClaim.claimName</dt><dd><code class="break">data-web-0</code></dd>');
    expect(html).toContain('<dt>→ PersistentVolume</dt><dd><code class="break">pv-data</code></dd>');
    expect(html).toContain('<dt>→ VolumeAttachment</dt><dd><code class="break">csi-0123</code></dd>');
    expect(html).toContain('<dt>CSI driver</dt><dd><code class="break">csi-loop.volumescope.dev</code></dd>');
    expect(html).toMatch(/<code>app<\/code>: <code class="break">\/data<\/code> \(subPath <code>app<\/code>\), read-only/);
    expect(html).toMatch(/<code>init<\/code>: <code class="break">\/seed<\/code>, read-write/);
    expect(html).not.toContain('not attachable');
  });

  it('a hostPath volume: path and type as written, and no attach or VolumeAttachment', () => {
    const html = render({
      pluginName: 'kubernetes.io/host-path',
      attachable: false,
      pods: [
        {
          podUid: 'a',
          podName: 'default/web-0',
          volumeName: 'logs',
          spec: { sourceType: 'hostPath', source: [{ path: 'path', value: '/var/log' }, { path: 'type', value: 'Directory' }], mounts: [{ container: 'app', mountPath: '/logs', readOnly: false }] },
        },
      ],
    });

    expect(html).toContain('<dt>hostPath.path</dt><dd><code class="break">/var/log</code></dd><dt>hostPath.type</dt><dd><code class="break">Directory</code></dd>');
    expect(html).toContain('not attachable: no attach, no VolumeAttachment');
    expect(html).not.toMatch(/>attached|VolumeAttachment<\/dt>/);
  });

  it('says so when the agent does not send the spec, or no desired pod lists the volume', () => {
    expect(render({ pluginName: 'kubernetes.io/csi', attachable: true, pods: [{ podUid: 'a', podName: 'default/web-0', volumeName: 'data', spec: null }] })).toContain('predates it');
    expect(render({ pluginName: null, attachable: null, pods: [] })).toContain('No desired pod lists this volume');
  });
});
