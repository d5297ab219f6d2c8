import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DesiredVolumeSpec, Snapshot } from '../api/index.ts';
import { exampleSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { deriveVolumeRows, indexSnapshot, stageLabel } from './pipeline.ts';
import { attachFact, volumeSpecView } from './volume-spec-view.ts';

const example = exampleSnapshot();
const web = example.desired.pods.find((p) => p.name === 'web-0');
const config = web?.volumes.find((v) => v.name === 'config');
const data = web?.volumes.find((v) => v.name === 'data');
if (web === undefined || config === undefined || data === undefined) throw new Error('fixture changed: web-0 with config and data');

const dataSpec: DesiredVolumeSpec = {
  sourceType: 'persistentVolumeClaim',
  source: [{ path: 'claimName', value: 'data-web-0' }],
  mounts: [{ container: 'app', mountPath: '/data', readOnly: true }],
  claimName: 'data-web-0',
  persistentVolumeName: 'pv-data',
  csiDriver: 'csi-loop.volumescope.dev',
  volumeAttachment: 'csi-0123',
};
const withSpec: Snapshot = {
  ...example,
  desired: { pods: example.desired.pods.map((p) => (p === web ? { ...p, volumes: p.volumes.map((v) => (v === data ? { ...v, spec: dataSpec } : v)) } : p)) },
};
const actualOf = (s: Snapshot, name: string) => indexSnapshot(s).actualByName.get(name) ?? null;

describe('volumeSpecView', () => {
  it('lists every desired pod spec of the volume, with the claim chain', () => {
    const view = volumeSpecView(withSpec, data.uniqueVolumeName, actualOf(withSpec, data.uniqueVolumeName));

    expect(view).toEqual({ pluginName: 'kubernetes.io/csi', attachable: true, pods: [{ podUid: web.uid, podName: 'default/web-0', volumeName: 'data', spec: dataSpec }] });
  });

  it('a pod spec the agent did not send is null; a configMap is not attachable', () => {
    const view = volumeSpecView(example, config.uniqueVolumeName, actualOf(example, config.uniqueVolumeName));

    expect(view.attachable).toBe(false);
    expect(view.pods.map((p) => p.spec)).toEqual([null]);
  });

  it('without a desired pod, attachable follows the device path of the actual state', () => {
    const orphan: Snapshot = { ...example, desired: { pods: [] } };

    expect(volumeSpecView(orphan, config.uniqueVolumeName, actualOf(orphan, config.uniqueVolumeName))).toEqual({ pluginName: 'kubernetes.io/configmap', attachable: false, pods: [] });
    expect(volumeSpecView(orphan, data.uniqueVolumeName, actualOf(orphan, data.uniqueVolumeName)).attachable).toBe(true);
    expect(volumeSpecView(orphan, 'unknown', null)).toEqual({ pluginName: null, attachable: null, pods: [] });
  });
});

describe('never "attached" for a plugin that is not attachable', () => {
  it.each([
    ['attached', false, '– not attachable (verified on the node)'],
    ['uncertain', false, '? not verified yet (not attachable)'],
    ['attached', true, '✓ attached'],
    ['uncertain', true, '? uncertain'],
    ['attached', null, '✓ attached'],
  ] as const)('attachFact(%s, attachable %s) = %s', (attachState, attachable, text) => {
    expect(attachFact({ attachState }, attachable)).toBe(text);
  });

  it('the rows of the non-attachable configMap label no stage "attached"; the CSI volume keeps it', () => {
    const rows = deriveVolumeRows(example);
    const labels = (name: string) => (rows.find((r) => r.volumeName === name)?.stages ?? []).map((s) => stageLabel(s.id, rows.find((r) => r.volumeName === name)?.attachable ?? true));

    expect(rows.find((r) => r.volumeName === 'config')?.attachable).toBe(false);
    expect(labels('config')).not.toContain('attached');
    expect(labels('config')).toContain('verified on node');
    expect(labels('data')).toContain('attached');
  });

  it('property: whatever the actual state, no stage of a row whose plugin is not attachable is labelled "attached"', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ attachState: fc.constantFrom('attached' as const, 'uncertain' as const), devicePath: fc.constantFrom('', '/dev/loop3'), present: fc.boolean() }), { minLength: 3, maxLength: 3 }),
        fc.boolean(),
        (changes, desired) => {
          const volumes = example.actual.volumes.flatMap((v, i) => {
            const c = changes[i % changes.length];
            return c === undefined || !c.present ? [] : [{ ...v, attachState: c.attachState, devicePath: c.devicePath }];
          });
          const pods = desired ? example.desired.pods.map((p) => ({ ...p, volumes: p.volumes.map((v) => ({ ...v, attachable: v.name === 'config' ? false : v.attachable })) })) : [];
          for (const row of deriveVolumeRows({ ...example, desired: { pods }, actual: { volumes } })) {
            const labels = row.stages.map((st) => stageLabel(st.id, row.attachable));
            if (!row.attachable) expect(labels).not.toContain('attached');
            if (row.pluginName === 'kubernetes.io/configmap' && desired) expect(row.attachable).toBe(false);
          }
        },
      ),
    );
  });

  it('a CSI volume whose driver does not require attach (attachable false) is not labelled attached either', () => {
    const noAttach: Snapshot = { ...example, desired: { pods: example.desired.pods.map((p) => ({ ...p, volumes: p.volumes.map((v) => ({ ...v, attachable: false })) })) } };
    const row = deriveVolumeRows(noAttach).find((r) => r.volumeName === 'data');

    expect(row?.attachable).toBe(false);
    expect(row?.stages.map((s) => stageLabel(s.id, false))).not.toContain('attached');
  });
});
