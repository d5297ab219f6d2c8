/**
 * Torture campaign "malformed-manifests": a real agent with a few valid pods (volumes mounted)
 * gets well over 100 malformed manifest files generated here, next to the valid ones: YAML alias
 * bombs, 10,000-level nesting, 10 MB strings, names with path tricks, symlinks pointing outside,
 * NUL bytes, duplicate keys, wrong kinds and apiVersions, multi-document files with one bad
 * document, binary garbage, empty files, huge numbers, and a wrong type in every field that
 * matters.
 *
 * Checks: each malformed file gets its own entry in the snapshot's `sourceErrors`, keyed by that
 * file, whose message starts with the file name and is short enough to read; names the source
 * ignores by contract (hidden, editor artefacts) and entries that are not files get nothing and
 * load nothing; the desired pods stay exactly the valid ones and their volumes stay mounted the
 * whole time; /healthz keeps answering (the longest wait is reported and bounded) and the
 * agent's RSS stays bounded; once the malformed files are deleted the errors go away and the
 * valid pods are still mounted.
 */
import { execFileSync } from 'node:child_process';
import { rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { KEPT_PODS, runStandalone, startAgentUnderTest, unmountedKeptVolumes } from './agent-under-test.ts';
import { rssBytes } from './harness.ts';
import type { Campaign, CampaignOptions, CampaignResult } from './campaign.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

// CASES

type Content = { text: string } | { bytes: Buffer } | { symlink: string } | { fifo: true };

/** One generated file: what it is, its name, its content, and whether the source must report it. */
export interface MalformedCase {
  category: string;
  file: string;
  content: Content;
  /** `error`: a source error for exactly this file; `ignored`: nothing (name or entry ignored by contract). */
  expect: 'error' | 'ignored';
}

/** Longest acceptable error message (a clear error, not an echo of the file). */
const MAX_MESSAGE_CHARS = 2_000;
/** The longest /healthz may take while the files are parsed (YAML is parsed on the event loop). */
const MAX_HEALTH_LATENCY_MS = 10_000;
/** How much the agent's RSS may grow over the campaign. */
const MAX_RSS_GROWTH_BYTES = 512 * 1024 * 1024;
const MB = 1024 * 1024;

type Doc = Record<string, unknown>;

function validPod(name: string): Doc {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
}

/** A copy of `doc` with the value at `path` replaced. */
function withValue(doc: Doc, path: readonly (string | number)[], value: unknown): Doc {
  const copy = structuredClone(doc);
  let node: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last !== undefined) node[last] = value;
  return copy;
}

/** A seeded byte generator (xorshift32), so the garbage is the same on every run. */
function garbage(seed: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function billionLaughs(levels: number, fanOut: number): string {
  const lines = ['a0: &a0 "lol"'];
  for (let l = 1; l <= levels; l++) lines.push(`a${l}: &a${l} [${Array.from({ length: fanOut }, () => `*a${l - 1}`).join(', ')}]`);
  return `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n${lines.map((l) => `x${l}`).join('\n')}\n`;
}

/** Every malformed file of the campaign (well over 100), in a stable order. */
export function malformedCases(): MalformedCase[] {
  const cases: MalformedCase[] = [];
  const add = (category: string, file: string, content: Content, expect: 'error' | 'ignored' = 'error'): void => {
    cases.push({ category, file, content, expect });
  };
  const yaml = (doc: unknown): Content => ({ text: stringify(doc) });

  // YAML alias bombs ("billion laughs"): expansion is capped, the file is an error.
  for (const [levels, fanOut] of [[9, 9], [12, 10], [30, 2], [4, 50]] as const) add('alias bomb', `bomb-${levels}x${fanOut}.yaml`, { text: billionLaughs(levels, fanOut) });
  add('alias bomb', 'bomb-in-pod.yaml', { text: `apiVersion: v1\nkind: Pod\nmetadata: {name: bomb}\nx: &a [1,1,1,1,1,1,1,1,1,1]\ny: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nz: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nw: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n` });
  add('alias bomb', 'bomb-merge-keys.yaml', { text: `a: &a {k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7}\n${Array.from({ length: 200 }, (_, i) => `m${i}: {<<: *a}`).join('\n')}\n` });
  add('alias bomb', 'alias-undefined.yaml', { text: 'apiVersion: v1\nkind: Pod\nmetadata: *nothing\n' });

  // Deep nesting.
  const depth = 10_000;
  add('deep nesting', 'nest-flow-seq.yaml', { text: '['.repeat(depth) + ']'.repeat(depth) });
  add('deep nesting', 'nest-flow-map.yaml', { text: '{a: '.repeat(depth) + '1' + '}'.repeat(depth) });
  add('deep nesting', 'nest-json-arrays.json', { text: '['.repeat(depth) + ']'.repeat(depth) });
  add('deep nesting', 'nest-json-objects.json', { text: '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) });
  add('deep nesting', 'nest-in-annotation.yaml', { text: `apiVersion: v1\nkind: Pod\nmetadata:\n  name: deep\n  annotations:\n    a: ${'['.repeat(depth)}${']'.repeat(depth)}\n` });
  add('deep nesting', 'nest-in-spec.json', { text: JSON.stringify(withValue(validPod('deep'), ['spec', 'volumes', 0, 'emptyDir'], '@')).replace('"@"', '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)) });
  add('deep nesting', 'nest-block-200.yaml', { text: Array.from({ length: 200 }, (_, i) => `${'  '.repeat(i)}k:`).join('\n') + ' 1\n' });
  add('deep nesting', 'nest-list-in-list.yaml', yaml({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'List', items: [validPod('inner')] }] }));

  // Huge strings.
  add('huge string', 'huge-10mb.yaml', { text: `apiVersion: v1\nkind: Pod\nmetadata:\n  name: "${'x'.repeat(10 * MB)}"\n` });
  add('huge string', 'huge-10mb.json', { text: JSON.stringify(withValue(validPod('huge'), ['metadata', 'name'], 'x'.repeat(10 * MB))) });
  add('huge string', 'huge-name-900kb.yaml', { text: stringify(withValue(validPod('huge'), ['metadata', 'name'], 'x'.repeat(900_000))) });
  add('huge string', 'huge-name-5mb.json', { text: JSON.stringify(withValue(validPod('huge'), ['metadata', 'name'], 'y'.repeat(5 * MB))) });
  add('huge string', 'huge-key-500kb.yaml', { text: `apiVersion: v1\nkind: Pod\nmetadata: {name: k}\n${'k'.repeat(500_000)}: 1\n` });
  add('huge string', 'huge-image-5mb.json', { text: JSON.stringify(withValue(validPod('img'), ['spec', 'containers', 0, 'name'], 'n'.repeat(5 * MB))) });

  // Path tricks: in names (the content is invalid, so the error must name the odd file) …
  const invalidPod = stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'trick' }, spec: { containers: [] } });
  for (const file of ['etc%2F..%2F..%2Fpasswd.yaml', 'a\\..\\..\\evil.yaml', 'new\nline.yaml', 'rtl-\u202eflm.yaml', '-rf.yaml', ' spaced .yaml', 'semi;colon.yaml', '$(id).yaml', `${'n'.repeat(250)}.yaml`, 'ünïcødé.yaml', 'double..dots.yaml']) {
    add('path trick', file, { text: invalidPod });
  }
  // … names the source ignores by contract (their content is a valid pod that must not load) …
  const sneakyPod = stringify(validPod('sneaky'));
  for (const file of ['..yaml', '..%2F..%2Fetc%2Fpasswd.yaml', '..\\..\\evil.yaml', '.hidden.yaml', '~lock.yaml', '#autosave.yaml', 'pod.yaml~', 'pod.yaml.swp', 'pod.YAML']) add('path trick', file, { text: sneakyPod }, 'ignored');
  // … and in the content.
  add('path trick', 'trick-pod-name.yaml', yaml(withValue(validPod('x'), ['metadata', 'name'], '../../etc')));
  add('path trick', 'trick-namespace.yaml', yaml(withValue(validPod('x'), ['metadata', 'namespace'], '../..')));
  add('path trick', 'trick-uid.yaml', yaml(withValue(validPod('x'), ['metadata', 'uid'], '../../../pods')));
  add('path trick', 'trick-volume-name.yaml', yaml(withValue(withValue(validPod('x'), ['spec', 'volumes', 0, 'name'], '../../data'), ['spec', 'containers', 0, 'volumeMounts', 0, 'name'], '../../data')));
  add('path trick', 'trick-subpath.yaml', yaml(withValue(validPod('x'), ['spec', 'containers', 0, 'volumeMounts', 0, 'subPath'], '../../../etc')));
  add('path trick', 'trick-configmap-item.yaml', yaml(withValue(validPod('x'), ['spec', 'volumes', 0], { name: 'data', configMap: { name: 'c', items: [{ key: 'k', path: '../../etc/passwd' }] } })));
  add('path trick', 'trick-hostpath-relative.yaml', yaml(withValue(validPod('x'), ['spec', 'volumes', 0], { name: 'data', hostPath: { path: '../../etc' } })));
  add('path trick', 'trick-container-name.yaml', yaml(withValue(validPod('x'), ['spec', 'containers', 0, 'name'], '../x')));

  // Symlinks pointing outside the directory (followed, as the kubelet does; what they point at is judged).
  add('symlink', 'link-etc-passwd.yaml', { symlink: '/etc/passwd' });
  add('symlink', 'link-dev-zero.yaml', { symlink: '/dev/zero' });
  add('symlink', 'link-dev-null.yaml', { symlink: '/dev/null' });
  add('symlink', 'link-proc-cpuinfo.yaml', { symlink: '/proc/cpuinfo' });
  add('symlink', 'link-loop-a.yaml', { symlink: 'link-loop-b.yaml' });
  add('symlink', 'link-loop-b.yaml', { symlink: 'link-loop-a.yaml' });
  add('symlink', 'link-dangling.yaml', { symlink: '/nonexistent/volumescope/pod.yaml' }, 'ignored');
  add('symlink', 'link-to-dir.yaml', { symlink: '/etc' }, 'ignored');
  add('symlink', 'fifo.yaml', { fifo: true });

  // NUL bytes.
  add('NUL', 'nul-in-yaml.yaml', { text: 'apiVersion: v1\nkind: Pod\u0000\nmetadata: {name: x}\n' });
  add('NUL', 'nul-in-name.json', { text: JSON.stringify(withValue(validPod('x'), ['metadata', 'name'], 'web\u0000x')) });
  add('NUL', 'nul-raw-json.json', { bytes: Buffer.concat([Buffer.from('{"apiVersion":"v1",'), Buffer.from([0]), Buffer.from('"kind":"Pod"}')]) });
  add('NUL', 'nul-only.yaml', { bytes: Buffer.alloc(4096) });
  add('NUL', 'nul-in-mount-path.yaml', yaml(withValue(validPod('x'), ['spec', 'containers', 0, 'volumeMounts', 0, 'mountPath'], '/data\u0000/x')));

  // Duplicate keys.
  add('duplicate key', 'dup-kind.yaml', { text: 'apiVersion: v1\nkind: Pod\nkind: Secret\nmetadata: {name: x}\n' });
  add('duplicate key', 'dup-name.yaml', { text: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\nspec: {containers: [{name: app, image: busybox}]}\n' });
  add('duplicate key', 'dup-in-container.yaml', { text: 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: app\n    image: a\n    image: b\n' });
  add('duplicate key', 'dup-flow.yaml', { text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "1", a: "2"}\n' });
  add('duplicate key', 'dup-quoted.yaml', { text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: "1"\n  "a": "2"\n' });
  add('duplicate key', 'dup-large-map.yaml', { text: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n${Array.from({ length: 40_000 }, (_, i) => `  k${i}: v\n`).join('')}  k0: again\n` });
  add('duplicate key', 'dup-object-in-file.yaml', { text: `${stringify(validPod('twice'))}---\n${stringify(validPod('twice'))}` });
  add('duplicate key', 'dup-json-last-wins-invalid.json', { text: '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok","name":"NOT_DNS"},"spec":{"containers":[{"name":"app","image":"b"}]}}' });

  // Wrong kinds and apiVersions.
  const pod = validPod('kinds');
  for (const [file, doc] of [
    ['kind-deployment.yaml', { ...pod, kind: 'Deployment', apiVersion: 'apps/v1' }],
    ['kind-lowercase.yaml', { ...pod, kind: 'pod' }],
    ['kind-empty.yaml', { ...pod, kind: '' }],
    ['kind-number.yaml', { ...pod, kind: 42 }],
    ['kind-null.yaml', { ...pod, kind: null }],
    ['kind-list.yaml', { ...pod, kind: ['Pod'] }],
    ['kind-missing.yaml', { apiVersion: 'v1', metadata: pod['metadata'], spec: pod['spec'] }],
    ['apiversion-apps.yaml', { ...pod, apiVersion: 'apps/v1' }],
    ['apiversion-v2.yaml', { ...pod, apiVersion: 'v2' }],
    ['apiversion-missing.yaml', { kind: 'Pod', metadata: pod['metadata'], spec: pod['spec'] }],
    ['apiversion-number.yaml', { ...pod, apiVersion: 1 }],
    ['csidriver-v1.yaml', { apiVersion: 'v1', kind: 'CSIDriver', metadata: { name: 'd.example.com' }, spec: {} }],
    ['list-items-missing.yaml', { apiVersion: 'v1', kind: 'List' }],
    ['list-items-string.yaml', { apiVersion: 'v1', kind: 'List', items: 'pods' }],
    ['podlist-with-secret.yaml', { apiVersion: 'v1', kind: 'PodList', items: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } }, 7] }],
    ['kind-namespace.yaml', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } }],
  ] as const) {
    add('wrong kind', file, yaml(doc));
  }

  // Multi-document files with one bad document: the file is invalid as a whole, its good pod not loaded.
  add('multi-document', 'multi-one-bad.yaml', { text: `${stringify(validPod('multi-good'))}---\n${stringify({ ...validPod('multi-bad'), spec: { containers: [] } })}` });
  add('multi-document', 'multi-syntax-middle.yaml', { text: `${stringify(validPod('multi-a'))}---\nmetadata: [\n---\n${stringify(validPod('multi-b'))}` });
  add('multi-document', 'multi-scalar-doc.yaml', { text: `${stringify(validPod('multi-c'))}---\njust a string\n` });
  add('multi-document', 'multi-many-bad.yaml', { text: '---\na: 1\n'.repeat(20_000) });
  add('multi-document', 'multi-separators-only.yaml', { text: '---\n'.repeat(50_000) });
  add('multi-document', 'multi-list-bad-item.yaml', yaml({ apiVersion: 'v1', kind: 'List', items: [validPod('list-good'), { ...validPod('list-bad'), metadata: { name: 'BAD NAME' } }] }));

  // Binary garbage (seeded).
  for (let i = 0; i < 8; i++) add('binary', `garbage-${i}.yaml`, { bytes: garbage(1000 + i, 64 + i * 997) });
  add('binary', 'garbage.json', { bytes: garbage(42, 2048) });
  add('binary', 'gzip.yaml', { bytes: Buffer.from([0x1f, 0x8b, 0x08, 0x00, ...garbage(7, 200)]) });
  add('binary', 'png.yaml', { bytes: Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), garbage(8, 300)]) });
  add('binary', 'elf.yaml', { bytes: Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46]), garbage(9, 300)]) });
  add('binary', 'utf16.yaml', { bytes: Buffer.from(`\ufeff${stringify(validPod('utf16'))}`, 'utf16le') });
  add('binary', 'printable-garbage.yaml', { text: garbage(11, 3000).toString('base64').replace(/[+/]/g, ':') });

  // Empty and content-free files.
  for (const [file, text] of [
    ['empty.yaml', ''],
    ['empty.json', ''],
    ['whitespace.yaml', ' \n\t\n'],
    ['comments.yaml', '# nothing\n# here\n'],
    ['separator.yaml', '---\n'],
    ['end-marker.yaml', '...\n'],
    ['null.yaml', 'null\n'],
    ['tilde.yaml', '~\n'],
    ['empty-map.yaml', '{}\n'],
    ['empty-list.json', '[]'],
    ['json-null.json', 'null'],
  ] as const) {
    add('empty', file, { text });
  }

  // Huge numbers.
  for (const [file, path, value] of [
    ['num-fsgroup-huge.yaml', ['spec', 'securityContext'], { fsGroup: 1e23 }],
    ['num-fsgroup-float.yaml', ['spec', 'securityContext'], { fsGroup: 1.5 }],
    ['num-runasuser-negative-huge.yaml', ['spec', 'securityContext'], { runAsUser: -1e300 }],
    ['num-sizelimit-inf.yaml', ['spec', 'volumes', 0, 'emptyDir'], { sizeLimit: '.inf' }],
    ['num-default-mode-huge.yaml', ['spec', 'volumes', 0], { name: 'data', configMap: { name: 'c', defaultMode: 1e20 } }],
    ['num-default-mode-negative.yaml', ['spec', 'volumes', 0], { name: 'data', configMap: { name: 'c', defaultMode: -1 } }],
    ['num-expiration-small.yaml', ['spec', 'volumes', 0], { name: 'data', projected: { sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 1 } }] } }],
  ] as const) {
    add('huge number', file, yaml(withValue(validPod('num'), path, value)));
  }
  add('huge number', 'num-1e400.yaml', { text: stringify(withValue(validPod('num'), ['spec', 'securityContext'], { fsGroup: 7 })).replace('fsGroup: 7', 'fsGroup: 1e400') });
  add('huge number', 'num-nan.yaml', { text: stringify(withValue(validPod('num'), ['spec', 'securityContext'], { fsGroup: 7 })).replace('fsGroup: 7', 'fsGroup: .nan') });
  add('huge number', 'num-hex-huge.yaml', { text: stringify(withValue(validPod('num'), ['spec', 'securityContext'], { fsGroup: 7 })).replace('fsGroup: 7', 'fsGroup: 0xFFFFFFFFFFFFFFFFFFFFFFFF') });
  add('huge number', 'num-storage-1e400.json', { text: JSON.stringify({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: 7 } } } }).replace('"storage":7', '"storage":1e400') });

  // A wrong type in every field that matters.
  const wrongTypes: readonly [string, unknown][] = [['number', 7], ['list', ['x']], ['object', { x: 1 }], ['bool', true], ['null', null]];
  const fields: readonly [string, (string | number)[]][] = [
    ['metadata', ['metadata']],
    ['name', ['metadata', 'name']],
    ['namespace', ['metadata', 'namespace']],
    ['uid', ['metadata', 'uid']],
    ['spec', ['spec']],
    ['containers', ['spec', 'containers']],
    ['container-name', ['spec', 'containers', 0, 'name']],
    ['volume-mounts', ['spec', 'containers', 0, 'volumeMounts']],
    ['mount-path', ['spec', 'containers', 0, 'volumeMounts', 0, 'mountPath']],
    ['volumes', ['spec', 'volumes']],
    ['volume-name', ['spec', 'volumes', 0, 'name']],
    ['empty-dir', ['spec', 'volumes', 0, 'emptyDir']],
  ];
  fields.forEach(([field, path], i) => {
    // Two wrong types per field, rotating, so every type appears; `null` only where a value is required.
    for (const [typeName, value] of [wrongTypes[i % wrongTypes.length], wrongTypes[(i + 2) % wrongTypes.length]] as [string, unknown][]) {
      // null is "not set": fine for optional fields and for lists (an empty list).
      if (value === null && (field === 'namespace' || field === 'uid' || field === 'volume-mounts')) continue;
      if (typeName === 'object' && (field === 'metadata' || field === 'spec' || field === 'empty-dir')) continue;
      add('wrong type', `type-${field}-${typeName}.yaml`, yaml(withValue(validPod(`type-${i}`), path, value)));
    }
  });
  for (const [file, doc] of [
    ['type-configmap-data-list.yaml', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: ['a'] }],
    ['type-configmap-data-number.yaml', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: { b: 1 } } }],
    ['type-secret-data-number.yaml', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: 7 }],
    ['type-secret-stringdata-list.yaml', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: ['x'] }],
    ['type-pvc-claim-number.yaml', withValue(validPod('pvc'), ['spec', 'volumes', 0], { name: 'data', persistentVolumeClaim: { claimName: 7 } })],
    ['type-readonly-string.yaml', withValue(validPod('ro'), ['spec', 'volumes', 0], { name: 'data', persistentVolumeClaim: { claimName: 'c', readOnly: 'yes' } })],
    ['type-pv-spec-list.yaml', { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv' }, spec: ['x'] }],
    ['type-pvc-access-modes.yaml', { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c' }, spec: { accessModes: 'ReadWriteOnce' } }],
    ['type-csidriver-spec.yaml', { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: 'd.example.com' }, spec: { attachRequired: 'no' } }],
  ] as const) {
    add('wrong type', file, yaml(doc));
  }
  return cases;
}

/** The short form: a third of the cases, at least one per category, without the slowest to parse. */
function shortCases(all: readonly MalformedCase[]): MalformedCase[] {
  const slow = new Set(['dup-large-map.yaml', 'multi-many-bad.yaml', 'multi-separators-only.yaml', 'huge-name-900kb.yaml', 'huge-key-500kb.yaml']);
  const seen = new Set<string>();
  return all.filter((c, i) => {
    if (slow.has(c.file)) return false;
    const first = !seen.has(c.category);
    seen.add(c.category);
    // Both loop links or neither: one alone would be a dangling link.
    return first || i % 3 === 0 || c.file.startsWith('link-loop-');
  });
}

async function writeCase(dir: string, c: MalformedCase): Promise<void> {
  const path = join(dir, c.file);
  const { content } = c;
  if ('text' in content) await writeFile(path, content.text);
  else if ('bytes' in content) await writeFile(path, content.bytes);
  else if ('symlink' in content) await symlink(content.symlink, path);
  else execFileSync('mkfifo', ['--', path]);
}

// CAMPAIGN

/** Polls /healthz back to back in the background and records the longest answer time. */
function watchHealth(baseUrl: string): { stop: () => Promise<{ maxMs: number; failures: number; polls: number }> } {
  let running = true;
  let maxMs = 0;
  let failures = 0;
  let polls = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(MAX_HEALTH_LATENCY_MS * 3) });
        await res.arrayBuffer();
        if (res.status !== 200) failures++;
      } catch {
        failures++;
      }
      polls++;
      maxMs = Math.max(maxMs, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { maxMs: Math.round(maxMs), failures, polls };
    },
  };
}

async function runMalformedManifests(options: CampaignOptions): Promise<CampaignResult> {
  const { size, workDir, log } = options;
  const all = malformedCases();
  const cases = size === 'full' ? all : shortCases(all);
  const failures: string[] = [];
  const figures: Record<string, number | string | boolean> = { cases: cases.length, errorCases: cases.filter((c) => c.expect === 'error').length };
  const started = performance.now();
  log(`starting the agent; ${cases.length} malformed files to write`);
  const under = await startAgentUnderTest(workDir);
  const { agent } = under;
  const health = watchHealth(agent.baseUrl);
  try {
    await exercise();
  } catch (err) {
    // A request to the agent failed: most likely it died. Say so, with what it printed last.
    await new Promise((resolve) => setTimeout(resolve, 500));
    failures.push(
      agent.hasExited
        ? `the agent exited (${JSON.stringify(await agent.exited)}): ${agent.stderr.slice(-800)}`
        : `the campaign failed: ${errorMessage(err)}`,
    );
  } finally {
    const healthFigures = await health.stop();
    figures['healthPolls'] = healthFigures.polls;
    figures['healthFailures'] = healthFigures.failures;
    figures['healthMaxLatencyMs'] = healthFigures.maxMs;
    if (healthFigures.failures > 0) failures.push(`/healthz failed ${healthFigures.failures} time(s)`);
    if (healthFigures.maxMs > MAX_HEALTH_LATENCY_MS) failures.push(`/healthz took ${healthFigures.maxMs} ms at worst (bound ${MAX_HEALTH_LATENCY_MS} ms)`);
    figures['agentCrashed'] = agent.hasExited;
    await under.stop();
  }

  async function exercise(): Promise<void> {
    const rssStart = await rssBytes(agent.pid);
    let rssMax = rssStart;
    const keptUids = new Set(KEPT_PODS.map((p) => p.uid));
    let lastLoss = '';
    const watch = (s: Snapshot): void => {
      const missing = unmountedKeptVolumes(s);
      const extra = s.desired.pods.filter((p) => !keptUids.has(p.uid)).map((p) => `${p.namespace}/${p.name}`);
      const loss = [...missing, ...extra.map((p) => `pod ${p} was loaded from a malformed file`)].join('; ');
      if (loss !== '' && loss !== lastLoss) failures.push(`the valid pods were affected: ${loss}`);
      lastLoss = loss;
    };

    const writeStarted = performance.now();
    for (const c of cases) await writeCase(under.manifestDir, c);
    log('written; waiting for every error');
    const expected = cases.filter((c) => c.expect === 'error');
    let last: Snapshot;
    const deadline = performance.now() + (size === 'full' ? 180_000 : 60_000);
    for (;;) {
      last = await agent.snapshot();
      watch(last);
      rssMax = Math.max(rssMax, await rssBytes(agent.pid));
      const files = new Set(last.sourceErrors.map((e) => e.file));
      if (expected.every((c) => files.has(c.file)) || performance.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    figures['allErrorsReportedMs'] = Math.round(performance.now() - writeStarted);
    const errorsByFile = new Map(last.sourceErrors.map((e) => [e.file, e.message]));
    for (const c of cases) {
      const message = errorsByFile.get(c.file);
      const shown = JSON.stringify(c.file).slice(0, 80);
      if (c.expect === 'ignored') {
        if (message !== undefined) failures.push(`${shown} (${c.category}) is ignored by contract but got an error: ${message.slice(0, 200)}`);
        continue;
      }
      if (message === undefined) failures.push(`${shown} (${c.category}): no source error`);
      else if (!message.startsWith(`${c.file}: `) || message.length <= c.file.length + 2) failures.push(`${shown} (${c.category}): the error does not start with the file name: ${message.slice(0, 200)}`);
      else if (message.length > MAX_MESSAGE_CHARS) failures.push(`${shown} (${c.category}): an error of ${message.length} characters`);
    }
    const unexpected = [...errorsByFile.keys()].filter((file) => !cases.some((c) => c.file === file));
    if (unexpected.length > 0) failures.push(`errors for files that are not malformed: ${unexpected.join(', ')}`);

    // Deleting the malformed files clears their errors; the valid pods are untouched throughout.
    for (const c of cases) await rm(join(under.manifestDir, c.file), { force: true });
    const cleared = await agent
      .waitForSnapshot('the source errors clear', (s) => {
        watch(s);
        return s.sourceErrors.length === 0 ? s : undefined;
      }, 60_000)
      .catch((err: unknown) => {
        failures.push(`after deleting the malformed files: ${err instanceof Error ? err.message.slice(0, 300) : String(err)}`);
        return null;
      });
    if (cleared !== null) watch(cleared);
    rssMax = Math.max(rssMax, await rssBytes(agent.pid));
    figures['rssStartBytes'] = rssStart;
    figures['rssMaxBytes'] = rssMax;
    if (rssMax - rssStart > MAX_RSS_GROWTH_BYTES) failures.push(`RSS grew by ${rssMax - rssStart} bytes (bound ${MAX_RSS_GROWTH_BYTES})`);
  }
  figures['categories'] = new Set(cases.map((c) => c.category)).size;
  figures['keptPods'] = KEPT_PODS.length;
  figures['durationMs'] = Math.round(performance.now() - started);
  return { name: 'malformed-manifests', ok: failures.length === 0, figures, failures };
}

export const malformedManifests: Campaign = { name: 'malformed-manifests', run: runMalformedManifests };

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await runStandalone(malformedManifests, process.argv.slice(2));
}
