/**
 * `fieldRef` values of downward API volumes (kubelet `pkg/fieldpath`): the pod's name,
 * namespace, uid, labels and annotations, whole or one key (`metadata.labels['app']`). Other
 * field paths (`spec.nodeName`, `status.podIP`, …) exist only for environment variables, and
 * the kubelet rejects them in volumes with `unsupported fieldPath: …`, as here.
 */
import type { Pod } from '../../k8s-types.ts';
import { goQuote } from '../../util/go-format.ts';

/**
 * `fieldpath.FormatMap`: one `key="value"` line per entry (value quoted as Go's `%q`), sorted by
 * key, without a trailing newline.
 */
export function formatMap(m: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(m ?? {})
    .sort(byteOrder)
    .map((key) => `${key}=${goQuote(m?.[key] ?? '')}`)
    .join('\n');
}

/** Go's `sort.Strings` order (bytes of the UTF-8 encoding). */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** `SplitMaybeSubscriptedPath`: `metadata.labels['app']` → {path: `metadata.labels`, subscript: `app`}. */
function splitMaybeSubscriptedPath(fieldPath: string): { path: string; subscript: string } | null {
  if (!fieldPath.endsWith("']")) return null;
  const inner = fieldPath.slice(0, -2);
  const open = inner.indexOf("['");
  if (open <= 0) return null;
  return { path: inner.slice(0, open), subscript: inner.slice(open + 2) };
}

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_MESSAGE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/** apimachinery's `IsQualifiedName`: the problems with a label or annotation key, [] when it is valid. */
function qualifiedNameErrors(value: string): string[] {
  const parts = value.split('/');
  let name: string;
  const errs: string[] = [];
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix === '') errs.push('prefix part must be non-empty');
    else if (prefix.length > 253) errs.push('prefix part must be no more than 253 characters');
    else if (!DNS1123_SUBDOMAIN.test(prefix)) {
      errs.push(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      );
    }
  } else {
    return [`a qualified name ${NAME_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name === '') errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (name !== '' && !NAME.test(name)) errs.push(`name part ${NAME_MESSAGE}`);
  return errs;
}

/** A field path a downward API volume cannot project, or an invalid key subscript. Texts are the kubelet's. */
export class FieldPathError extends Error {
  override readonly name = 'FieldPathError';
}

export function isFieldPathError(err: unknown): err is FieldPathError {
  return err instanceof FieldPathError;
}

/** `fieldpath.ExtractFieldPathAsString` for a pod. Throws {@link FieldPathError}. */
export function extractFieldPathAsString(pod: Pod, fieldPath: string): string {
  const sub = splitMaybeSubscriptedPath(fieldPath);
  if (sub !== null) {
    const check = (key: string) => {
      const errs = qualifiedNameErrors(key);
      if (errs.length > 0) throw new FieldPathError(`invalid key subscript in ${fieldPath}: ${errs.join(';')}`);
    };
    switch (sub.path) {
      case 'metadata.annotations':
        check(sub.subscript.toLowerCase());
        return valueOf(pod.metadata.annotations, sub.subscript);
      case 'metadata.labels':
        check(sub.subscript);
        return valueOf(pod.metadata.labels, sub.subscript);
      default:
        throw new FieldPathError(`fieldPath ${goQuote(fieldPath)} does not support subscript`);
    }
  }
  switch (fieldPath) {
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    default:
      throw new FieldPathError(`unsupported fieldPath: ${fieldPath}`);
  }
}

function valueOf(record: Readonly<Record<string, string>> | undefined, key: string): string {
  return record !== undefined && Object.hasOwn(record, key) ? (record[key] ?? '') : '';
}
