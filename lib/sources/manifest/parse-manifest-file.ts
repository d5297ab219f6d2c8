/**
 * Pure parsing and validation of one manifest file. The watcher (manifest-source.ts) calls this
 * for every changed file; everything about file contents is decided here.
 */
import { isMap, isScalar, LineCounter, parseAllDocuments, visit, type Document } from 'yaml';
import type { z } from 'zod';
import type { Pod } from '../../volume/k8s-types.ts';
import {
  configMapSchema,
  csiDriverSchema,
  persistentVolumeClaimSchema,
  persistentVolumeSchema,
  podSchema,
  secretSchema,
} from './k8s-schemas.ts';
import { describeIssue, formatFieldPath, normalizeDocument } from './manifest-document.ts';
import type { FieldProblem } from './manifest-document.ts';
import { describeObject, formatLocation, isManifestKind, objectKey, supportedKinds } from './manifest-object.ts';
import type { SourceError } from '../source.ts';
import type { DocumentLocation, ManifestKind, ManifestObject } from './manifest-object.ts';
import { deriveManifestPodUID } from './pod-uid.ts';
import { errorMessage } from '../../volume/errors.ts';

/**
 * The outcome of parsing one file. A file is valid only as a whole: when `errors` is non-empty,
 * `objects` is empty, even if some documents were fine. (The source then keeps the file's last
 * valid version, so fixing one document of a multi-document file never flaps the others.)
 */
export interface ManifestFileParseResult {
  objects: ManifestObject[];
  errors: SourceError[];
}

/** YAML aliases expand to at most this many nodes per document ("billion laughs" guard). */
const maxAliasCount = 100;

/**
 * Problems listed per file; the rest are counted in one last line. A file of a million bad
 * documents must not become a million messages (memory, log lines, snapshot size).
 */
export const maxErrorsPerFile = 50;

/**
 * Parses and validates the manifest file `fileName` (relative to the manifest directory; used in
 * messages and to choose the format) with contents `text`, for the node `nodeName`.
 *
 * - `*.json`: one JSON value. Any other name: YAML, any number of `---`-separated documents;
 *   empty documents are skipped but still counted, so document indexes (0-based) match the file.
 * - A document is one object of a supported kind, or a `List` (or `<Kind>List`) whose `items`
 *   are such objects. Other kinds are errors naming the kind.
 * - Every object is validated (k8s-schemas.ts) and defaulted: namespaced objects get namespace
 *   "default"; pods get `spec.nodeName = nodeName` (as the kubelet does for static pods) and,
 *   without `metadata.uid`, the uid {@link deriveManifestPodUID} derives.
 * - The same object (kind/namespace/name) or pod uid twice in the file is an error.
 * - A file with no objects at all is an error: an empty file is most often one being written,
 *   and deleting the file is the explicit way to remove its objects.
 */
export function parseManifestFile(fileName: string, text: string, nodeName: string): ManifestFileParseResult {
  const errors: SourceError[] = [];
  const objects: ManifestObject[] = [];
  let unlisted = 0;
  const fail = (message: string): void => {
    if (errors.length < maxErrorsPerFile) errors.push({ file: fileName, message: `${fileName}: ${message}` });
    else unlisted++;
  };

  for (const document of decodeDocuments(fileName, text)) {
    if ('error' in document) {
      fail(document.error);
      continue;
    }
    const { value, problems } = normalizeDocument(document.value);
    const location: DocumentLocation = { document: document.index };
    if (problems.length > 0) {
      for (const p of problems) fail(`${formatLocation(location)}${describeRaw(value)}: ${fieldMessage(p)}`);
      continue;
    }
    const raw = asRecord(value);
    if (raw === undefined) {
      fail(`${formatLocation(location)}: must be an object with apiVersion and kind, got ${describeJSONType(value)}`);
      continue;
    }
    const kind = raw.kind;
    if (typeof kind === 'string' && isListKind(kind)) {
      const items = raw.items;
      if (!Array.isArray(items)) {
        fail(`${formatLocation(location)} (${kind}): items: must be a list`);
        continue;
      }
      items.forEach((item: unknown, i) => {
        decodeObject({ document: document.index, item: i }, item, nodeName, objects, fail);
      });
      continue;
    }
    decodeObject(location, raw, nodeName, objects, fail);
  }

  checkDuplicates(objects, fail);
  if (errors.length === 0 && objects.length === 0) {
    fail('holds no objects (an empty file is treated as one still being written; delete the file to remove its objects)');
  }
  if (unlisted > 0) errors.push({ file: fileName, message: `${fileName}: ${unlisted} more problem(s) not listed` });
  if (errors.length > 0) return { objects: [], errors };
  return { objects, errors };
}

/** A decoded document, or the syntax error that kept it from being decoded (already worded). */
type DecodedDocument = { index: number; value: unknown } | { index: number; error: string };

/** Splits and decodes the file, in document order. */
function decodeDocuments(fileName: string, text: string): DecodedDocument[] {
  if (text.trim() === '') return [];
  if (fileName.endsWith('.json')) {
    try {
      return [{ index: 0, value: JSON.parse(text) as unknown }];
    } catch (err) {
      // V8 quotes a piece of the text ('Unexpected token 'h', "…hunter2…" is not valid JSON');
      // that piece may be Secret data, so it is cut off.
      return [{ index: 0, error: `invalid JSON: ${errorMessage(err).replace(/, .* is not valid JSON$/s, '')}` }];
    }
  }
  const decoded: DecodedDocument[] = [];
  const lineCounter = new LineCounter();
  // yaml's own unique-keys check compares every key with every earlier one (a 470 KB map took
  // over a minute); duplicateKey does the same check in one pass. Warnings (e.g. collection
  // keys stringified) are not errors and would only go to stderr.
  parseAllDocuments(text, { uniqueKeys: false, lineCounter, logLevel: 'error' }).forEach((doc, index) => {
    const syntaxError = doc.errors[0];
    if (syntaxError !== undefined) {
      // yaml's messages carry a multi-line code excerpt; the first line has the position. A
      // stack overflow is yaml's way of saying the nesting is too deep.
      const message = firstLine(syntaxError.message).replace(/^Maximum call stack size exceeded/, 'nested too deeply to parse');
      decoded.push({ index, error: `document ${index}: invalid YAML: ${message}` });
      return;
    }
    const duplicate = duplicateKey(doc, lineCounter);
    if (duplicate !== null) {
      decoded.push({ index, error: `document ${index}: invalid YAML: ${duplicate}` });
      return;
    }
    try {
      const value: unknown = doc.toJS({ maxAliasCount });
      // A document with only comments (or nothing) between separators holds no object.
      if (value !== null && value !== undefined) decoded.push({ index, value });
    } catch (err) {
      decoded.push({ index, error: `document ${index}: invalid YAML: ${firstLine(errorMessage(err))}` });
    }
  });
  return decoded;
}

/**
 * The first key that repeats in a mapping of the document, as yaml words it ("Map keys must be
 * unique at line L, column C"), or null. Scalar keys are equal when their values are (`a` and
 * `"a"` are, `1` and `"1"` are not), as in yaml's own check.
 */
function duplicateKey(doc: Document.Parsed, lineCounter: LineCounter): string | null {
  let found: string | null = null;
  visit(doc, {
    Map(_key, map) {
      if (!isMap(map)) return undefined;
      const seen = new Set<string>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const value: unknown = pair.key.value;
        const id = `${typeof value}:${String(value)}`;
        if (seen.has(id)) {
          const at = lineCounter.linePos(pair.key.range?.[0] ?? 0);
          const shown = String(value).length > 60 ? `${String(value).slice(0, 60)}…` : String(value);
          found = `Map keys must be unique at line ${at.line}, column ${at.col}: ${JSON.stringify(shown)}`;
          return visit.BREAK;
        }
        seen.add(id);
      }
      return undefined;
    },
  });
  return found;
}

function isListKind(kind: string): boolean {
  return kind === 'List' || (kind.endsWith('List') && isManifestKind(kind.slice(0, -'List'.length)));
}

/** Validates one object document (or `List` item) and appends it to `objects`. */
function decodeObject(
  location: DocumentLocation,
  value: unknown,
  nodeName: string,
  objects: ManifestObject[],
  fail: (message: string) => void,
): void {
  const where = formatLocation(location);
  const raw = asRecord(value);
  if (raw === undefined) {
    fail(`${where}: must be an object with apiVersion and kind, got ${describeJSONType(value)}`);
    return;
  }
  const label = describeRaw(raw);
  const { kind, apiVersion } = raw;
  if (typeof kind !== 'string' || kind === '') {
    fail(`${where}${label}: kind: ${kind === undefined || kind === '' || kind === null ? 'is required' : `must be a string, got ${describeJSONType(kind)}`}`);
    return;
  }
  if (isListKind(kind)) {
    fail(`${where}${label}: a ${kind} must not be nested in another list`);
    return;
  }
  if (!isManifestKind(kind)) {
    fail(`${where}${label}: kind ${JSON.stringify(kind)} is not supported (supported: ${Object.keys(supportedKinds).join(', ')})`);
    return;
  }
  const expectedVersion = supportedKinds[kind].apiVersion;
  if (apiVersion !== expectedVersion) {
    const got = typeof apiVersion === 'string' ? JSON.stringify(apiVersion) : apiVersion === undefined || apiVersion === null ? 'none' : describeJSONType(apiVersion);
    fail(`${where}${label}: apiVersion: must be ${JSON.stringify(expectedVersion)} for ${kind}, got ${got}`);
    return;
  }
  const parsed = validate(kind, raw, location, nodeName);
  if (parsed.ok) {
    objects.push(deepFreeze(parsed.object));
    return;
  }
  for (const issue of parsed.issues) fail(`${where}${label}: ${fieldMessage(issue)}`);
}

type ValidationResult = { ok: true; object: ManifestObject } | { ok: false; issues: FieldProblem[] };

function validate(kind: ManifestKind, raw: Record<string, unknown>, location: DocumentLocation, nodeName: string): ValidationResult {
  // reportInput lets type errors say what was found (describeIssue uses only its type).
  const options = { reportInput: true };
  const failed = (error: z.ZodError): ValidationResult => ({
    ok: false,
    issues: error.issues.map((issue) => ({ path: issue.path, message: describeIssue(issue) })),
  });
  switch (kind) {
    case 'Pod': {
      const r = podSchema.safeParse(raw, options);
      return r.success ? { ok: true, object: { kind, location, object: defaultPod(r.data, nodeName) } } : failed(r.error);
    }
    case 'PersistentVolume': {
      const r = persistentVolumeSchema.safeParse(raw, options);
      return r.success ? { ok: true, object: { kind, location, object: r.data } } : failed(r.error);
    }
    case 'PersistentVolumeClaim': {
      const r = persistentVolumeClaimSchema.safeParse(raw, options);
      return r.success ? { ok: true, object: { kind, location, object: withDefaultNamespace(r.data) } } : failed(r.error);
    }
    case 'ConfigMap': {
      const r = configMapSchema.safeParse(raw, options);
      return r.success ? { ok: true, object: { kind, location, object: withDefaultNamespace(r.data) } } : failed(r.error);
    }
    case 'Secret': {
      const r = secretSchema.safeParse(raw, options);
      return r.success ? { ok: true, object: { kind, location, object: withDefaultNamespace(r.data) } } : failed(r.error);
    }
    case 'CSIDriver': {
      const r = csiDriverSchema.safeParse(raw, options);
      return r.success ? { ok: true, object: { kind, location, object: r.data } } : failed(r.error);
    }
  }
}

const defaultNamespace = 'default';

function withDefaultNamespace<T extends { metadata: { namespace?: string } }>(object: T): T {
  return { ...object, metadata: { ...object.metadata, namespace: object.metadata.namespace ?? defaultNamespace } };
}

function defaultPod(pod: Pod, nodeName: string): Pod {
  const namespace = pod.metadata.namespace ?? defaultNamespace;
  return {
    ...pod,
    metadata: { ...pod.metadata, namespace, uid: pod.metadata.uid ?? deriveManifestPodUID(nodeName, namespace, pod.metadata.name) },
    // Every pod in the manifest directory runs on this node, whatever the file says (kubelet
    // file source behaviour).
    spec: { ...pod.spec, nodeName },
  };
}

/** Reports the second and later occurrence of an object identity or pod uid in the file. */
function checkDuplicates(objects: readonly ManifestObject[], fail: (message: string) => void): void {
  const seenKeys = new Map<string, DocumentLocation>();
  const seenUIDs = new Map<string, ManifestObject>();
  for (const o of objects) {
    const where = `${formatLocation(o.location)} (${describeObject(o)})`;
    const key = objectKey(o);
    const first = seenKeys.get(key);
    if (first !== undefined) {
      fail(`${where}: duplicate of ${formatLocation(first)}`);
      continue;
    }
    seenKeys.set(key, o.location);
    if (o.kind !== 'Pod') continue;
    const uid = o.object.metadata.uid ?? '';
    const owner = seenUIDs.get(uid);
    if (owner !== undefined) {
      fail(`${where}: metadata.uid: ${uid} is already used by ${formatLocation(owner.location)} (${describeObject(owner)})`);
      continue;
    }
    seenUIDs.set(uid, o);
  }
}

function fieldMessage(problem: FieldProblem): string {
  const path = formatFieldPath(problem.path);
  return path === '' ? problem.message : `${path}: ${problem.message}`;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function describeJSONType(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return `a ${typeof value}`;
}

/**
 * " (Pod default/web)" from whatever the raw document says, for messages about documents that
 * may be invalid. Names are shown only when they are printable strings; a namespaced kind
 * without a namespace shows the default one.
 */
function describeRaw(value: unknown): string {
  const raw = asRecord(value);
  if (raw === undefined) return '';
  const kind = typeof raw.kind === 'string' && isPrintable(raw.kind) ? raw.kind : undefined;
  const metadata = asRecord(raw.metadata);
  const name = typeof metadata?.name === 'string' && isPrintable(metadata.name) ? metadata.name : undefined;
  let namespace: string | undefined;
  if (metadata?.namespace !== undefined) {
    namespace = typeof metadata.namespace === 'string' && isPrintable(metadata.namespace) ? metadata.namespace : '?';
  } else if (kind !== undefined && isManifestKind(kind) && supportedKinds[kind].namespaced) {
    namespace = defaultNamespace;
  }
  if (kind === undefined) return '';
  if (name === undefined) return ` (${kind})`;
  return namespace === undefined ? ` (${kind} ${name})` : ` (${kind} ${namespace}/${name})`;
}

function isPrintable(value: string): boolean {
  // eslint-disable-next-line no-control-regex -- the point is to detect control characters
  return value !== '' && value.length <= 253 && !/[\u0000-\u001f\u007f]/.test(value);
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
