/**
 * Generic handling of one decoded manifest document before and after schema validation:
 * normalisation of the raw value, field paths and the wording of validation problems.
 */
import type { z } from 'zod';

/** A problem at a field path inside a document. */
export interface FieldProblem {
  path: readonly PropertyKey[];
  message: string;
}

/** Documents nested deeper than this are rejected rather than walked (no manifest needs it). */
export const maxDocumentDepth = 64;

/**
 * Prepares a decoded document for the schemas and reports problems that apply to every field:
 * - NUL in any string or key is rejected (NUL is never safe to hand to a syscall or a CLI);
 * - the key `__proto__` is rejected (no Kubernetes field has it; it could alter prototypes);
 * - keys whose value is null are dropped: in the Kubernetes JSON decoder null means "unset",
 *   so `emptyDir:` with no value is the same as leaving the field out.
 * Returns a fresh copy made of plain objects and arrays; the input is not changed.
 */
export function normalizeDocument(value: unknown): { value: unknown; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const walk = (node: unknown, path: PropertyKey[]): unknown => {
    if (path.length > maxDocumentDepth) {
      problems.push({ path, message: `nesting deeper than ${maxDocumentDepth} levels` });
      return undefined;
    }
    if (typeof node === 'string') {
      if (node.includes('\0')) problems.push({ path, message: 'must not contain NUL' });
      return node;
    }
    if (Array.isArray(node)) return node.map((item: unknown, i) => walk(item, [...path, i]));
    if (typeof node === 'object' && node !== null) {
      const entries: [string, unknown][] = [];
      for (const [key, child] of Object.entries(node)) {
        if (key.includes('\0')) {
          problems.push({ path, message: 'keys must not contain NUL' });
          continue;
        }
        if (key === '__proto__') {
          problems.push({ path: [...path, key], message: 'is not an allowed key' });
          continue;
        }
        if (child === null) continue;
        entries.push([key, walk(child, [...path, key])]);
      }
      // fromEntries defines own properties, so no key can reach a prototype.
      return Object.fromEntries(entries);
    }
    return node;
  };
  const normalized = walk(value, []);
  return { value: normalized, problems };
}

/** `spec.volumes[0].name`, `metadata.annotations["example.com/x"]`. Empty for the root. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z_$][\w$]*$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

const expectedNames: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  array: 'a list',
  object: 'an object',
  record: 'an object',
  undefined: 'absent',
};

/**
 * Words a zod issue as "<what is wrong>", in the style of the API server's field errors.
 * Issues must come from a parse with `reportInput: true` so type errors can name what was found;
 * only the type of the input is used, never its value (it may be Secret data).
 */
export function describeIssue(issue: z.core.$ZodIssue): string {
  // Messages given in the schemas win; only zod's generic defaults are reworded.
  if (!isDefaultMessage(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      if (typeof issue.input === 'number' && !Number.isFinite(issue.input)) return `must be a finite number, got ${String(issue.input)}`;
      const expected = expectedNames[issue.expected] ?? issue.expected;
      return `must be ${expected}, got ${describeType(issue.input)}`;
    }
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}${issue.origin === 'array' ? ' items' : ''}`;
    case 'too_small':
      return `must be at least ${String(issue.minimum)}${issue.origin === 'array' ? ' items' : ''}`;
    default:
      return issue.message;
  }
}

function isDefaultMessage(message: string): boolean {
  return /^(Invalid input|Invalid option|Too big|Too small)/.test(message);
}
