/**
 * Test support: the PATCH formats the fake API server accepts.
 *
 * - JSON merge patch (RFC 7386, `application/merge-patch+json`): objects merge recursively,
 *   `null` deletes a key, anything else (arrays included) replaces.
 * - Strategic merge patch (`application/strategic-merge-patch+json`), simplified: as a merge
 *   patch, except that lists named in {@link strategicMergeKeys} merge item by item on their
 *   merge key (an item `{"$patch": "delete", <key>: …}` removes that item), and a map with
 *   `"$patch": "replace"` replaces instead of merging. Other directives (`$setElementOrder/…`,
 *   `$retainKeys`, `$deleteFromPrimitiveList/…`) are ignored. Lists are looked up by field name
 *   only, not by their full path, which is enough for the objects tests patch. In particular
 *   `status.volumesInUse` and `status.volumesAttached` have no merge strategy in the real
 *   `NodeStatus` either, so a patch replaces them whole, exactly as the real API server does.
 * - JSON patch (RFC 6902, `application/json-patch+json`, client-node's default for PATCH):
 *   `add`, `remove`, `replace`, `test`, `copy`, `move`.
 *
 * Every function returns a new value and never changes its inputs.
 */
import { isDeepStrictEqual } from 'node:util';
import type { JsonObject, JsonValue } from '../plain-json.ts';
import { isJsonObject } from '../plain-json.ts';

/** A patch cannot be applied: bad format (HTTP 400) or a failed `test` / missing path (HTTP 422). */
export class PatchError extends Error {
  override readonly name = 'PatchError';
  readonly status: 400 | 422;

  constructor(message: string, status: 400 | 422) {
    super(message);
    this.status = status;
  }
}

export function isPatchError(err: unknown): err is PatchError {
  return err instanceof PatchError;
}

/** List fields that merge by key in a strategic merge patch, with their merge key. */
export const strategicMergeKeys: Readonly<Record<string, string>> = {
  conditions: 'type',
  addresses: 'type',
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  env: 'name',
  ownerReferences: 'uid',
  taints: 'key',
};

export function applyMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const out: JsonObject = isJsonObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) Reflect.deleteProperty(out, key);
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

export function applyStrategicMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return structuredClone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _directive, ...rest } = patch;
    return structuredClone(rest);
  }
  const out: JsonObject = isJsonObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) {
      Reflect.deleteProperty(out, key);
      continue;
    }
    const mergeKey = strategicMergeKeys[key];
    const current = out[key];
    if (mergeKey !== undefined && Array.isArray(value)) {
      out[key] = mergeKeyedList(Array.isArray(current) ? current : [], value, mergeKey);
    } else {
      out[key] = applyStrategicMergePatch(current, value);
    }
  }
  return out;
}

function mergeKeyedList(current: JsonValue[], patch: JsonValue[], mergeKey: string): JsonValue[] {
  const out = structuredClone(current);
  for (const item of patch) {
    if (!isJsonObject(item) || !(mergeKey in item)) throw new PatchError(`strategic merge patch: list items need the merge key ${JSON.stringify(mergeKey)}`, 400);
    const index = out.findIndex((existing) => isJsonObject(existing) && isDeepStrictEqual(existing[mergeKey], item[mergeKey]));
    if (item.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = applyStrategicMergePatch(out[index], item);
    else out.push(applyStrategicMergePatch(undefined, item));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON patch

/** RFC 6901 pointer → path segments. */
function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`json patch: invalid path ${JSON.stringify(pointer)}`, 400);
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function getAt(doc: JsonValue, segments: readonly string[]): JsonValue | undefined {
  let current: JsonValue | undefined = doc;
  for (const segment of segments) {
    if (Array.isArray(current)) current = current[Number(segment)];
    else if (isJsonObject(current)) current = current[segment];
    else return undefined;
  }
  return current;
}

/** The container of the last segment; throws 422 when it does not exist. */
function parentOf(doc: JsonValue, segments: readonly string[], pointer: string): { parent: JsonValue[] | JsonObject; last: string } {
  const parent = getAt(doc, segments.slice(0, -1));
  const last = segments[segments.length - 1];
  if (last === undefined || (!Array.isArray(parent) && !isJsonObject(parent))) {
    throw new PatchError(`json patch: the parent of ${JSON.stringify(pointer)} does not exist`, 422);
  }
  return { parent, last };
}

function arrayIndex(array: JsonValue[], segment: string, pointer: string, forInsert: boolean): number {
  if (forInsert && segment === '-') return array.length;
  const index = Number(segment);
  const max = forInsert ? array.length : array.length - 1;
  if (!/^\d+$/.test(segment) || index > max) throw new PatchError(`json patch: index out of range in ${JSON.stringify(pointer)}`, 422);
  return index;
}

function addAt(doc: JsonValue, pointer: string, value: JsonValue): JsonValue {
  const segments = parsePointer(pointer);
  if (segments.length === 0) return structuredClone(value);
  const { parent, last } = parentOf(doc, segments, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, pointer, true), 0, structuredClone(value));
  else parent[last] = structuredClone(value);
  return doc;
}

function removeAt(doc: JsonValue, pointer: string): { doc: JsonValue; removed: JsonValue } {
  const segments = parsePointer(pointer);
  if (segments.length === 0) throw new PatchError('json patch: cannot remove the whole document', 422);
  const { parent, last } = parentOf(doc, segments, pointer);
  if (Array.isArray(parent)) {
    const [removed] = parent.splice(arrayIndex(parent, last, pointer, false), 1);
    return { doc, removed: removed ?? null };
  }
  const removed = parent[last];
  if (removed === undefined) throw new PatchError(`json patch: ${JSON.stringify(pointer)} does not exist`, 422);
  Reflect.deleteProperty(parent, last);
  return { doc, removed };
}

export function applyJsonPatch(target: JsonValue, operations: JsonValue): JsonValue {
  if (!Array.isArray(operations)) throw new PatchError('json patch: the body must be an array of operations', 400);
  let doc = structuredClone(target);
  for (const op of operations) {
    if (!isJsonObject(op) || typeof op.op !== 'string' || typeof op.path !== 'string') {
      throw new PatchError('json patch: every operation needs "op" and "path"', 400);
    }
    const path = op.path;
    const value = op.value;
    const from = typeof op.from === 'string' ? op.from : undefined;
    switch (op.op) {
      case 'add':
        if (value === undefined) throw new PatchError('json patch: "add" needs a value', 400);
        doc = addAt(doc, path, value);
        break;
      case 'remove':
        doc = removeAt(doc, path).doc;
        break;
      case 'replace':
        if (value === undefined) throw new PatchError('json patch: "replace" needs a value', 400);
        if (getAt(doc, parsePointer(path)) === undefined) throw new PatchError(`json patch: ${JSON.stringify(path)} does not exist`, 422);
        doc = addAt(removeAt(doc, path).doc, path, value);
        break;
      case 'test':
        if (!isDeepStrictEqual(getAt(doc, parsePointer(path)), value)) throw new PatchError(`json patch: test of ${JSON.stringify(path)} failed`, 422);
        break;
      case 'copy': {
        if (from === undefined) throw new PatchError('json patch: "copy" needs "from"', 400);
        const copied = getAt(doc, parsePointer(from));
        if (copied === undefined) throw new PatchError(`json patch: ${JSON.stringify(from)} does not exist`, 422);
        doc = addAt(doc, path, copied);
        break;
      }
      case 'move': {
        if (from === undefined) throw new PatchError('json patch: "move" needs "from"', 400);
        const moved = removeAt(doc, from);
        doc = addAt(moved.doc, path, moved.removed);
        break;
      }
      default:
        throw new PatchError(`json patch: unknown operation ${JSON.stringify(op.op)}`, 400);
    }
  }
  return doc;
}
