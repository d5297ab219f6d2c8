/**
 * Test support: field and label selectors as the API server evaluates them, for the fake API
 * server. Field selectors support `=`, `==` and `!=` on the fields the real server supports for
 * the kinds the fake serves (every kind: `metadata.name`, `metadata.namespace`; plus the per-kind
 * fields in {@link supportedFieldLabels}); any other field is rejected, as the real server does.
 * Label selectors support `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)` and `k notin (a,b)`.
 */
import type { JsonObject, JsonValue } from '../plain-json.ts';
import { isJsonObject } from '../plain-json.ts';

export class SelectorError extends Error {
  override readonly name = 'SelectorError';
}

export function isSelectorError(err: unknown): err is SelectorError {
  return err instanceof SelectorError;
}

export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

export type LabelRequirement =
  | { key: string; operator: '=' | '!='; value: string }
  | { key: string; operator: 'exists' | '!exists' }
  | { key: string; operator: 'in' | 'notin'; values: string[] };

/** Field labels beyond `metadata.name` and `metadata.namespace`, by resource. */
export const supportedFieldLabels: Readonly<Record<string, readonly string[]>> = {
  pods: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  nodes: ['spec.unschedulable'],
  secrets: ['type'],
  namespaces: ['status.phase'],
  events: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
};

/** Parses a field selector for `resource`; throws {@link SelectorError} for bad syntax or fields. */
export function parseFieldSelector(resource: string, text: string): FieldRequirement[] {
  if (text.trim() === '') return [];
  const allowed = new Set(['metadata.name', 'metadata.namespace', ...(supportedFieldLabels[resource] ?? [])]);
  return text.split(',').map((term) => {
    const match = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (match === null) throw new SelectorError(`invalid field selector term ${JSON.stringify(term)}`);
    const [, field = '', op = '', value = ''] = match;
    if (!allowed.has(field)) throw new SelectorError(`field label not supported: ${field}`);
    return { field, operator: op === '!=' ? '!=' : '=', value };
  });
}

/** The value of a dotted field path as a string ('' when absent), as the API server compares it. */
export function fieldValue(object: JsonObject, path: string): string {
  let current: JsonValue | undefined = object;
  for (const part of path.split('.')) {
    if (!isJsonObject(current)) return '';
    current = current[part];
  }
  if (current === undefined || current === null) return '';
  if (typeof current === 'string') return current;
  if (typeof current === 'number' || typeof current === 'boolean') return String(current);
  return '';
}

export function matchesFields(object: JsonObject, requirements: readonly FieldRequirement[]): boolean {
  return requirements.every((r) => (fieldValue(object, r.field) === r.value) === (r.operator === '='));
}

/** Splits at commas outside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

/** Parses a label selector; throws {@link SelectorError} for bad syntax. */
export function parseLabelSelector(text: string): LabelRequirement[] {
  if (text.trim() === '') return [];
  return splitTerms(text).map((raw): LabelRequirement => {
    const term = raw.trim();
    const set = /^([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)$/.exec(term);
    if (set !== null) {
      const [, key = '', op = '', list = ''] = set;
      return { key, operator: op === 'in' ? 'in' : 'notin', values: list.split(',').map((v) => v.trim()).filter((v) => v !== '') };
    }
    const eq = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(term);
    if (eq !== null) {
      const [, key = '', op = '', value = ''] = eq;
      return { key, operator: op === '!=' ? '!=' : '=', value };
    }
    const exists = /^(!?)([^\s!=(),]+)$/.exec(term);
    if (exists !== null) {
      const [, bang = '', key = ''] = exists;
      return { key, operator: bang === '!' ? '!exists' : 'exists' };
    }
    throw new SelectorError(`invalid label selector term ${JSON.stringify(term)}`);
  });
}

export function matchesLabels(object: JsonObject, requirements: readonly LabelRequirement[]): boolean {
  const metadata = object.metadata;
  const labelsValue = isJsonObject(metadata) ? metadata.labels : undefined;
  const labels = isJsonObject(labelsValue) ? labelsValue : {};
  return requirements.every((r) => {
    const raw = labels[r.key];
    const value = typeof raw === 'string' ? raw : undefined;
    switch (r.operator) {
      case '=':
        return value === r.value;
      case '!=':
        return value !== r.value;
      case 'exists':
        return value !== undefined;
      case '!exists':
        return value === undefined;
      case 'in':
        return value !== undefined && r.values.includes(value);
      case 'notin':
        return value === undefined || !r.values.includes(value);
    }
  });
}
