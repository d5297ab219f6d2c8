import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { maxErrorsPerFile, parseManifestFile } from './parse-manifest-file.ts';
import { deriveManifestPodUID } from './pod-uid.ts';

// ---------------------------------------------------------------------------------------------
// Fixtures: plain objects turned into YAML, so each case states only what it changes.

type Doc = Record<string, unknown>;

function pod(name = 'web', spec: Doc = {}, metadata: Doc = {}): Doc {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', emptyDir: {} }],
      ...spec,
    },
  };
}

function pv(name = 'pv-1', spec: Doc = {}, metadata: Doc = {}): Doc {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, ...metadata },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      csi: { driver: 'hostpath.csi.k8s.io', volumeHandle: 'vol-1' },
      ...spec,
    },
  };
}

function pvc(name = 'claim-1', spec: Doc = {}): Doc {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-1', ...spec },
  };
}

const configMap: Doc = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { 'app.conf': 'x=1' } };
const secret: Doc = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: 'prod' }, data: { password: 'aHVudGVyMg==' } };
const csiDriver: Doc = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'CSIDriver',
  metadata: { name: 'hostpath.csi.k8s.io' },
  spec: { attachRequired: false, volumeLifecycleModes: ['Persistent', 'Ephemeral'] },
};

function yamlOf(...docs: unknown[]): string {
  return docs.map((d) => stringify(d)).join('---\n');
}

function messagesOf(fileName: string, text: string): string[] {
  return parseManifestFile(fileName, text, 'node-a').errors.map((e) => e.message);
}

// ---------------------------------------------------------------------------------------------

describe('parseManifestFile with valid files', () => {
  it('reads every supported kind from a multi-document YAML file, in document order', () => {
    // Arrange
    const text = yamlOf(pod(), pv(), pvc(), configMap, secret, csiDriver);

    // Act
    const { objects, errors } = parseManifestFile('all.yaml', text, 'node-a');

    // Assert
    expect(errors).toEqual([]);
    expect(objects.map((o) => [o.kind, o.location.document])).toEqual([
      ['Pod', 0],
      ['PersistentVolume', 1],
      ['PersistentVolumeClaim', 2],
      ['ConfigMap', 3],
      ['Secret', 4],
      ['CSIDriver', 5],
    ]);
  });

  it('defaults the namespace of namespaced kinds to "default" and leaves cluster-scoped kinds without one', () => {
    const { objects } = parseManifestFile('all.yaml', yamlOf(pod(), pv(), pvc(), configMap, secret, csiDriver), 'node-a');
    expect(objects.map((o) => o.object.metadata.namespace)).toEqual(['default', undefined, 'default', 'default', 'prod', undefined]);
  });

  it('gives a pod without a uid the uid derived from node, namespace and name, and sets spec.nodeName', () => {
    const [first] = parseManifestFile('pod.yaml', yamlOf(pod('web', { nodeName: 'elsewhere' })), 'node-a').objects;
    expect(first?.kind).toBe('Pod');
    expect(first?.object.metadata.uid).toBe(deriveManifestPodUID('node-a', 'default', 'web'));
    expect(first?.kind === 'Pod' ? first.object.spec.nodeName : undefined).toBe('node-a');
  });

  it('gives the same pod the same uid on every parse and a different uid in another namespace', () => {
    const uidOf = (text: string) => parseManifestFile('pod.yaml', text, 'node-a').objects[0]?.object.metadata.uid;
    expect(uidOf(yamlOf(pod()))).toBe(uidOf(yamlOf(pod())));
    expect(uidOf(yamlOf(pod('web', {}, { namespace: 'other' })))).not.toBe(uidOf(yamlOf(pod())));
  });

  it('keeps a uid the manifest declares', () => {
    const uid = '0b6a3c2e-9f7d-4c1a-8e2b-1d3f5a7c9e0b';
    const { objects } = parseManifestFile('pod.yaml', yamlOf(pod('web', {}, { uid })), 'node-a');
    expect(objects[0]?.object.metadata.uid).toBe(uid);
  });

  it.each([
    { name: 'a JSON file holding one object', file: 'pod.json', text: JSON.stringify(pod()), kinds: ['Pod'] },
    {
      name: 'a JSON file holding a List',
      file: 'list.json',
      text: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pod(), pv(), configMap] }),
      kinds: ['Pod', 'PersistentVolume', 'ConfigMap'],
    },
    {
      name: 'a YAML PodList',
      file: 'pods.yml',
      text: yamlOf({ apiVersion: 'v1', kind: 'PodList', items: [pod('a'), pod('b')] }),
      kinds: ['Pod', 'Pod'],
    },
  ])('reads $name', ({ file, text, kinds }) => {
    const { objects, errors } = parseManifestFile(file, text, 'node-a');
    expect(errors).toEqual([]);
    expect(objects.map((o) => o.kind)).toEqual(kinds);
  });

  it('locates List items by document and item index', () => {
    const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pod('a'), pod('b')] });
    expect(parseManifestFile('list.json', text, 'node-a').objects.map((o) => o.location)).toEqual([
      { document: 0, item: 0 },
      { document: 0, item: 1 },
    ]);
  });

  it('skips empty and comment-only documents but keeps counting them', () => {
    const text = `${stringify(pod('a'))}---\n# nothing here\n---\n---\n${stringify(pod('b'))}---\n`;
    const { objects, errors } = parseManifestFile('pods.yaml', text, 'node-a');
    expect(errors).toEqual([]);
    expect(objects.map((o) => o.location.document)).toEqual([0, 3]);
  });

  it('normalises numeric quantities to strings', () => {
    const text = yamlOf(pod('web', { containers: [{ name: 'app', resources: { limits: { cpu: 1, memory: '64Mi' } } }], volumes: [] }));
    const [first] = parseManifestFile('pod.yaml', text, 'node-a').objects;
    expect(first?.kind === 'Pod' ? first.object.spec.containers[0]?.resources?.limits : undefined).toEqual({ cpu: '1', memory: '64Mi' });
  });

  it('strips fields the volume manager does not model', () => {
    const text = yamlOf(pod('web', { restartPolicy: 'Never', containers: [{ name: 'app', ports: [{ containerPort: 80 }] }], volumes: [] }));
    const [first] = parseManifestFile('pod.yaml', text, 'node-a').objects;
    expect(first?.object).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', uid: deriveManifestPodUID('node-a', 'default', 'web') },
      spec: { containers: [{ name: 'app' }], volumes: [], nodeName: 'node-a' },
    });
  });

  it('treats a null field as unset, as the Kubernetes decoder does', () => {
    const text = 'apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: null}\nspec:\n  containers: [{name: app}]\n  volumes:\n  - name: data\n    emptyDir:\n    hostPath: {path: /srv}\n';
    const { objects, errors } = parseManifestFile('pod.yaml', text, 'node-a');
    expect(errors).toEqual([]);
    expect(objects[0]?.kind === 'Pod' ? objects[0].object.spec.volumes : undefined).toEqual([{ name: 'data', hostPath: { path: '/srv' } }]);
  });

  it('accepts a CSI volume handle with slashes, because the handle is hashed before it becomes a path', () => {
    expect(messagesOf('pv.yaml', yamlOf(pv('pv-1', { csi: { driver: 'ebs.csi.aws.com', volumeHandle: 'projects/p/zones/z/disks/d' } })))).toEqual([]);
  });

  it('returns deeply frozen objects', () => {
    const [first] = parseManifestFile('pod.yaml', yamlOf(pod()), 'node-a').objects;
    expect(Object.isFrozen(first?.object)).toBe(true);
    expect(Object.isFrozen(first?.kind === 'Pod' ? first.object.spec.volumes?.[0] : undefined)).toBe(true);
  });
});

describe('parseManifestFile with invalid documents', () => {
  const cases: { name: string; doc: Doc; messages: string[] }[] = [
    // Path escapes in names that become path components.
    {
      name: 'a pod name ../x',
      doc: pod('../x'),
      messages: ["pods.yaml: document 0 (Pod default/../x): metadata.name: must not contain '/'"],
    },
    {
      name: 'a pod name a/b',
      doc: pod('a/b'),
      messages: ["pods.yaml: document 0 (Pod default/a/b): metadata.name: must not contain '/'"],
    },
    {
      name: 'a pod name ..',
      doc: pod('..'),
      messages: ["pods.yaml: document 0 (Pod default/..): metadata.name: must not be '.' or '..'"],
    },
    {
      name: 'a NUL in a pod name',
      doc: pod('web\0x'),
      // The name is not repeated in the prefix: it is not printable.
      messages: ['pods.yaml: document 0 (Pod): metadata.name: must not contain NUL'],
    },
    {
      name: 'a NUL in a CSI volume handle, which is otherwise free-form',
      doc: pv('pv-1', { csi: { driver: 'd.example.com', volumeHandle: 'vol\0' } }),
      messages: ['pods.yaml: document 0 (PersistentVolume pv-1): spec.csi.volumeHandle: must not contain NUL'],
    },
    {
      name: 'a NUL in a field the schemas do not know',
      doc: pod('web', {}, { annotations: { note: 'a\0b' } }),
      messages: ['pods.yaml: document 0 (Pod default/web): metadata.annotations.note: must not contain NUL'],
    },
    {
      name: 'a pod uid ../etc',
      doc: pod('web', {}, { uid: '../etc' }),
      messages: ["pods.yaml: document 0 (Pod default/web): metadata.uid: must not contain '/'"],
    },
    {
      name: 'a pod uid with a dot',
      doc: pod('web', {}, { uid: 'a.b' }),
      messages: ["pods.yaml: document 0 (Pod default/web): metadata.uid: must consist of ASCII letters, digits and '-', starting with a letter or digit"],
    },
    {
      name: 'a pod volume name ..',
      doc: pod('web', { volumes: [{ name: '..', emptyDir: {} }], containers: [{ name: 'app' }] }),
      messages: ["pods.yaml: document 0 (Pod default/web): spec.volumes[0].name: must not be '.' or '..'"],
    },
    {
      name: 'a PV name a/b',
      doc: pv('a/b'),
      messages: ["pods.yaml: document 0 (PersistentVolume a/b): metadata.name: must not contain '/'"],
    },
    {
      name: 'a ConfigMap key ../x',
      doc: { ...configMap, data: { '../x': 'y' } },
      messages: ['pods.yaml: document 0 (ConfigMap default/cfg): data["../x"]: key must not contain \'/\''],
    },
    {
      name: 'an item path that climbs out of the volume',
      doc: pod('web', { volumes: [{ name: 'data', configMap: { name: 'cfg', items: [{ key: 'a', path: '../../etc/passwd' }] } }] }),
      messages: ["pods.yaml: document 0 (Pod default/web): spec.volumes[0].configMap.items[0].path: must not contain '..'"],
    },
    {
      name: 'an absolute item path',
      doc: pod('web', { volumes: [{ name: 'data', secret: { secretName: 's', items: [{ key: 'a', path: '/etc/x' }] } }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[0].secret.items[0].path: must be a relative path'],
    },
    {
      name: 'a subPath that climbs out of the volume',
      doc: pod('web', { containers: [{ name: 'app', volumeMounts: [{ name: 'data', mountPath: '/d', subPath: 'a/../../x' }] }] }),
      messages: ["pods.yaml: document 0 (Pod default/web): spec.containers[0].volumeMounts[0].subPath: must not contain '..'"],
    },
    {
      name: 'a hostPath with a .. segment',
      doc: pod('web', { volumes: [{ name: 'data', hostPath: { path: '/var/../etc' } }] }),
      messages: ["pods.yaml: document 0 (Pod default/web): spec.volumes[0].hostPath.path: must not contain '..'"],
    },
    {
      name: 'a relative local PV path',
      doc: pv('pv-1', { csi: undefined, local: { path: 'mnt/disk' } }),
      messages: ['pods.yaml: document 0 (PersistentVolume pv-1): spec.local.path: must be an absolute path'],
    },
    // DNS names.
    {
      name: 'a volume name that is not a DNS label',
      doc: pod('web', { volumes: [{ name: 'Data_1', emptyDir: {} }], containers: [{ name: 'app' }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[0].name: must be a DNS-1123 label'],
    },
    {
      name: 'a container name that is not a DNS label',
      doc: pod('web', { containers: [{ name: 'App' }], volumes: [] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.containers[0].name: must be a DNS-1123 label'],
    },
    {
      name: 'a pod name that is not a DNS subdomain',
      doc: pod('Web'),
      messages: ['pods.yaml: document 0 (Pod default/Web): metadata.name: must be a DNS-1123 subdomain'],
    },
    {
      name: 'a namespace that is not a DNS label',
      doc: pod('web', {}, { namespace: 'kube.system' }),
      messages: ['pods.yaml: document 0 (Pod kube.system/web): metadata.namespace: must be a DNS-1123 label'],
    },
    // Required fields and structure.
    {
      name: 'a pod without containers',
      doc: pod('web', { containers: [], volumes: [] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.containers: must have at least one container'],
    },
    {
      name: 'a pod without a spec',
      doc: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' } },
      messages: ['pods.yaml: document 0 (Pod default/web): spec: is required'],
    },
    {
      name: 'an object without a name',
      doc: { ...configMap, metadata: {} },
      messages: ['pods.yaml: document 0 (ConfigMap): metadata.name: is required'],
    },
    {
      name: 'a volume without a source',
      doc: pod('web', { volumes: [{ name: 'data' }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[0]: must specify exactly one volume source (found none)'],
    },
    {
      name: 'a volume with two sources',
      doc: pod('web', { volumes: [{ name: 'data', emptyDir: {}, hostPath: { path: '/srv' } }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[0]: must specify exactly one volume source (found emptyDir, hostPath)'],
    },
    {
      name: 'a volume with an unsupported source',
      doc: pod('web', { volumes: [{ name: 'data', nfs: { server: 'x', path: '/' } }] }),
      messages: [
        'pods.yaml: document 0 (Pod default/web): spec.volumes[0]: unsupported volume source nfs (supported: emptyDir, hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim, ephemeral, csi, gcePersistentDisk)',
      ],
    },
    {
      name: 'a mount of a volume the pod does not declare',
      doc: pod('web', { containers: [{ name: 'app', volumeMounts: [{ name: 'cache', mountPath: '/c' }] }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.containers[0].volumeMounts[0].name: volume "cache" not found in spec.volumes'],
    },
    {
      name: 'two volumes with the same name',
      doc: pod('web', { volumes: [{ name: 'data', emptyDir: {} }, { name: 'data', emptyDir: {} }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[1].name: duplicate volume name "data"'],
    },
    {
      name: 'a projected source with two kinds',
      doc: pod('web', { volumes: [{ name: 'data', projected: { sources: [{ secret: { name: 's' }, configMap: { name: 'c' } }] } }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[0].projected.sources[0]: must specify exactly one projection source (found secret, configMap)'],
    },
    {
      name: 'a PVC without a spec',
      doc: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'claim-1' } },
      messages: ['pods.yaml: document 0 (PersistentVolumeClaim default/claim-1): spec: is required'],
    },
    {
      name: 'a PVC without a storage request',
      doc: pvc('claim-1', { resources: { requests: {} } }),
      messages: ['pods.yaml: document 0 (PersistentVolumeClaim default/claim-1): spec.resources.requests.storage: is required'],
    },
    {
      name: 'a PVC with an unknown access mode',
      doc: pvc('claim-1', { accessModes: ['ReadWriteSometimes'] }),
      messages: [
        'pods.yaml: document 0 (PersistentVolumeClaim default/claim-1): spec.accessModes[0]: must be one of "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"',
      ],
    },
    {
      name: 'a PV without a source',
      doc: pv('pv-1', { csi: undefined }),
      messages: [
        'pods.yaml: document 0 (PersistentVolume pv-1): spec: must specify exactly one persistent volume source of csi, local, hostPath, gcePersistentDisk (found none)',
      ],
    },
    {
      name: 'a PV in a namespace',
      doc: pv('pv-1', {}, { namespace: 'default' }),
      messages: ['pods.yaml: document 0 (PersistentVolume default/pv-1): metadata.namespace: must not be set: the object is cluster-scoped'],
    },
    {
      name: 'a CSIDriver without a spec',
      doc: { ...csiDriver, spec: undefined },
      messages: ['pods.yaml: document 0 (CSIDriver hostpath.csi.k8s.io): spec: is required'],
    },
    {
      name: 'a pod phase Kubernetes does not have',
      doc: { ...pod(), status: { phase: 'Done' } },
      messages: ['pods.yaml: document 0 (Pod default/web): status.phase: must be one of "Pending", "Running", "Succeeded", "Failed", "Unknown"'],
    },
    {
      name: 'a label value that is not a string',
      doc: pod('web', {}, { labels: { version: 2 } }),
      messages: ['pods.yaml: document 0 (Pod default/web): metadata.labels.version: must be a string, got a number'],
    },
    // Quantities.
    {
      name: 'a PV capacity that is not a quantity',
      doc: pv('pv-1', { capacity: { storage: 'lots' } }),
      messages: ['pods.yaml: document 0 (PersistentVolume pv-1): spec.capacity.storage: must be a quantity such as "1Gi" or "500m", got "lots"'],
    },
    {
      name: 'a PV without capacity.storage',
      doc: pv('pv-1', { capacity: {} }),
      messages: ['pods.yaml: document 0 (PersistentVolume pv-1): spec.capacity.storage: is required'],
    },
    {
      name: 'an emptyDir sizeLimit that is not a quantity',
      doc: pod('web', { volumes: [{ name: 'data', emptyDir: { sizeLimit: '1Gb' } }] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.volumes[0].emptyDir.sizeLimit: must be a quantity such as "1Gi" or "500m", got "1Gb"'],
    },
    {
      name: 'a negative resource limit',
      doc: pod('web', { containers: [{ name: 'app', resources: { limits: { memory: '-1Gi' } } }], volumes: [] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.containers[0].resources.limits.memory: must not be negative'],
    },
    {
      name: 'a quantity that is neither a string nor a number',
      doc: pod('web', { containers: [{ name: 'app', resources: { limits: { cpu: true } } }], volumes: [] }),
      messages: ['pods.yaml: document 0 (Pod default/web): spec.containers[0].resources.limits.cpu: must be a quantity (a string such as "1Gi" or a number)'],
    },
    // Secrets.
    {
      name: 'Secret data that is not base64',
      doc: { ...secret, data: { password: 'hunter2!' } },
      messages: ['pods.yaml: document 0 (Secret prod/creds): data.password: must be base64-encoded'],
    },
    // Kinds and versions.
    {
      name: 'an unsupported kind',
      doc: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } },
      messages: [
        'pods.yaml: document 0 (Deployment web): kind "Deployment" is not supported (supported: Pod, PersistentVolume, PersistentVolumeClaim, ConfigMap, Secret, CSIDriver)',
      ],
    },
    {
      name: 'a supported kind with the wrong apiVersion',
      doc: { ...csiDriver, apiVersion: 'storage.k8s.io/v1beta1' },
      messages: ['pods.yaml: document 0 (CSIDriver hostpath.csi.k8s.io): apiVersion: must be "storage.k8s.io/v1" for CSIDriver, got "storage.k8s.io/v1beta1"'],
    },
    {
      name: 'a document without a kind',
      doc: { apiVersion: 'v1', metadata: { name: 'x' } },
      messages: ['pods.yaml: document 0: kind: is required'],
    },
  ];

  it.each(cases)('reports $name with file, document, object and field path', ({ doc, messages }) => {
    expect(messagesOf('pods.yaml', yamlOf(doc))).toEqual(messages);
  });

  it('reports the document index of the invalid document in a multi-document file', () => {
    const text = yamlOf(pod('a'), pod('b'), pod('web', { volumes: [{ name: 'Data', emptyDir: {} }], containers: [{ name: 'app' }] }));
    expect(messagesOf('pods.yaml', text)).toEqual(['pods.yaml: document 2 (Pod default/web): spec.volumes[0].name: must be a DNS-1123 label']);
  });

  it('treats a file with valid and invalid documents as invalid as a whole', () => {
    const { objects, errors } = parseManifestFile('pods.yaml', yamlOf(pod('a'), { kind: 'Deployment', apiVersion: 'apps/v1', metadata: { name: 'd' } }), 'node-a');
    expect(objects).toEqual([]);
    expect(errors).toHaveLength(1);
  });

  it('names the List item of an invalid object', () => {
    const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pod('a'), pod('B')] });
    expect(messagesOf('list.json', text)).toEqual(['list.json: document 0 items[1] (Pod default/B): metadata.name: must be a DNS-1123 subdomain']);
  });

  it('rejects a List nested in a List', () => {
    const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'List', items: [] }] });
    expect(messagesOf('list.json', text)).toEqual(['list.json: document 0 items[0] (List): a List must not be nested in another list']);
  });

  it('reports a document that is not an object', () => {
    expect(messagesOf('pods.yaml', '- a\n- b\n')).toEqual(['pods.yaml: document 0: must be an object with apiVersion and kind, got a list']);
  });

  it('reports invalid YAML with its position, in document order with other problems', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\n---\nmetadata: [\n';
    expect(messagesOf('pods.yaml', text)).toEqual([
      'pods.yaml: document 0 (ConfigMap): metadata: is required',
      'pods.yaml: document 1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 5, column 1:',
    ]);
  });

  it('reports duplicate keys as invalid YAML', () => {
    expect(messagesOf('pods.yaml', 'apiVersion: v1\nkind: Pod\nkind: Pod\n')[0]).toMatch(/^pods\.yaml: document 0: invalid YAML: Map keys must be unique at line 3/);
  });

  it.each([
    { name: 'a number too large for a double', value: '1e400', shown: 'Infinity' },
    { name: '.inf', value: '.inf', shown: 'Infinity' },
    { name: '.nan', value: '.nan', shown: 'NaN' },
  ])('names a non-finite number ($name) instead of "got a number"', ({ value, shown }) => {
    const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  securityContext: {fsGroup: ${value}}\n  containers: [{name: app, image: busybox}]\n`;
    expect(messagesOf('pods.yaml', text)).toEqual([`pods.yaml: document 0 (Pod default/web): spec.securityContext.fsGroup: must be a finite number, got ${shown}`]);
  });

  it('says a kind or apiVersion of the wrong type is one, not that it is missing', () => {
    expect(messagesOf('pods.yaml', 'apiVersion: v1\nkind: 42\nmetadata: {name: web}\n')).toEqual(['pods.yaml: document 0: kind: must be a string, got a number']);
    expect(messagesOf('pods.yaml', 'apiVersion: 1\nkind: Pod\nmetadata: {name: web}\n')).toEqual(['pods.yaml: document 0 (Pod default/web): apiVersion: must be "v1" for Pod, got a number']);
  });

  it('reports YAML nested 10,000 levels deep as too deeply nested, with the position', () => {
    const [message] = messagesOf('deep.yaml', '['.repeat(10_000) + ']'.repeat(10_000));
    expect(message).toMatch(/^deep\.yaml: document 0: invalid YAML: nested too deeply to parse at line 1, column \d+:$/);
  });

  it('reports a duplicate key in a nested mapping, naming the key and its position', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: "1"\n  b: "2"\n  "a": "3"\n';
    expect(messagesOf('cm.yaml', text)).toEqual(['cm.yaml: document 0: invalid YAML: Map keys must be unique at line 7, column 3: "a"']);
  });

  it('keys of different types are different keys (1 and "1"), as in YAML', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  1: x\n  "1": y\n';
    expect(messagesOf('cm.yaml', text).some((m) => m.includes('Map keys must be unique'))).toBe(false);
  });

  it('checks the keys of a 40,000-key mapping in one pass (the duplicate at its end is found within the test timeout)', () => {
    const keys = Array.from({ length: 40_000 }, (_, i) => `  k${i}: v\n`).join('');
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n${keys}  k0: again\n`;
    expect(messagesOf('cm.yaml', text)).toEqual([`cm.yaml: document 0: invalid YAML: Map keys must be unique at line ${40_000 + 5}, column 3: "k0"`]);
  });

  it(`lists at most ${maxErrorsPerFile} problems of a file and counts the rest`, () => {
    const text = '---\na: 1\n'.repeat(200);
    const messages = messagesOf('many.yaml', text);
    expect(messages).toHaveLength(maxErrorsPerFile + 1);
    expect(messages[0]).toBe('many.yaml: document 0: kind: is required');
    expect(messages.at(-1)).toBe(`many.yaml: ${200 - maxErrorsPerFile} more problem(s) not listed`);
  });

  it.each([
    { name: 'a truncated object', text: '{"apiVersion": "v1",' },
    { name: 'an unquoted value', text: '{"kind": "Secret", "data": {"password": sup3r-s3cret}}' },
  ])('reports invalid JSON ($name) without quoting the text', ({ text }) => {
    const messages = messagesOf('pod.json', text);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^pod\.json: invalid JSON: /);
    expect(messages[0]).not.toContain('sup3r');
  });

  it.each([
    { name: 'an empty file', text: '' },
    { name: 'a file with only comments', text: '# nothing yet\n' },
    { name: 'an empty JSON file', text: '  \n' },
  ])('reports $name as holding no objects', ({ text }) => {
    expect(messagesOf('pods.yaml', text)).toEqual([
      'pods.yaml: holds no objects (an empty file is treated as one still being written; delete the file to remove its objects)',
    ]);
  });

  it('reports the same object twice in one file', () => {
    expect(messagesOf('pods.yaml', yamlOf(pod(), configMap, pod()))).toEqual(['pods.yaml: document 2 (Pod default/web): duplicate of document 0']);
  });

  it('reports the same pod uid twice in one file', () => {
    const uid = '0b6a3c2e-9f7d-4c1a-8e2b-1d3f5a7c9e0b';
    expect(messagesOf('pods.yaml', yamlOf(pod('a', {}, { uid }), pod('b', {}, { uid })))).toEqual([
      `pods.yaml: document 1 (Pod default/b): metadata.uid: ${uid} is already used by document 0 (Pod default/a)`,
    ]);
  });

  it('does not echo Secret values in messages', () => {
    const [message] = messagesOf('pods.yaml', yamlOf({ ...secret, data: { password: 'sup3r-s3cret!' } }));
    expect(message).not.toContain('sup3r');
  });
});
