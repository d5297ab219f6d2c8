/**
 * Validation primitives for names, uids, keys and relative paths in manifests. Each function
 * returns a problem description (a phrase that completes "<field>: …") or `undefined` when the
 * value is acceptable, so the same rules serve zod refinements and direct checks.
 *
 * Path safety is the first concern: the volume manager turns pod uids, pod volume names,
 * PV names, CSI driver names and ConfigMap/Secret keys into path components under its root
 * directory, and item paths / subPaths into relative paths below a volume. Anything that could
 * leave that directory ('/', '.', '..', NUL, absolute paths, '..' segments) is rejected with a
 * specific message before the (stricter) syntax rules run.
 */

const dns1123LabelMaxLength = 63;
const dns1123SubdomainMaxLength = 253;
/** CSI driver names (and CSIDriver object names) are limited to 63 characters by Kubernetes. */
const csiDriverNameMaxLength = 63;
/** Longest accepted uid: a UUID is 36 characters; 64 leaves room for other generators. */
const uidMaxLength = 64;
/** Kubernetes limits ConfigMap and Secret keys to 253 characters. */
const configKeyMaxLength = 253;

const dns1123LabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123SubdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const csiDriverNamePattern = /^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*$/;
/**
 * Uids: ASCII letters, digits and '-', starting with a letter or digit. This accepts UUIDs (API
 * server uids), the kubelet's 32-hex static pod uids and our derived uids, and nothing that can
 * act as a path separator, a relative-path element or an option (leading '-') on a command line.
 */
const uidPattern = /^[a-zA-Z0-9][a-zA-Z0-9-]*$/;
/** ConfigMap/Secret keys (`IsConfigMapKey`): they become file names inside the volume. */
const configKeyPattern = /^[-._a-zA-Z0-9]+$/;

/** A value that becomes a single path component: non-empty, no '/', not '.' or '..', no NUL. */
export function pathComponentProblem(value: string): string | undefined {
  if (value === '') return 'must not be empty';
  if (value.includes('\0')) return 'must not contain NUL';
  if (value.includes('/')) return "must not contain '/'";
  if (value === '.' || value === '..') return "must not be '.' or '..'";
  return undefined;
}

/** `IsDNS1123Label`: pod volume names, container names, namespaces. Also a safe path component. */
export function dns1123LabelProblem(value: string): string | undefined {
  const unsafe = pathComponentProblem(value);
  if (unsafe !== undefined) return unsafe;
  if (value.length > dns1123LabelMaxLength) return `must be no more than ${dns1123LabelMaxLength} characters`;
  if (!dns1123LabelPattern.test(value)) return 'must be a DNS-1123 label';
  return undefined;
}

/** `IsDNS1123Subdomain`: object names. Also a safe path component (no '/', no '..'). */
export function dns1123SubdomainProblem(value: string): string | undefined {
  const unsafe = pathComponentProblem(value);
  if (unsafe !== undefined) return unsafe;
  if (value.length > dns1123SubdomainMaxLength) return `must be no more than ${dns1123SubdomainMaxLength} characters`;
  if (!dns1123SubdomainPattern.test(value)) return 'must be a DNS-1123 subdomain';
  return undefined;
}

/** CSI driver names (`ValidateCSIDriverName`): a subdomain of at most 63 characters, any case. */
export function csiDriverNameProblem(value: string): string | undefined {
  const unsafe = pathComponentProblem(value);
  if (unsafe !== undefined) return unsafe;
  if (value.length > csiDriverNameMaxLength) return `must be no more than ${csiDriverNameMaxLength} characters`;
  if (!csiDriverNamePattern.test(value)) return 'must be a CSI driver name (a DNS-1123 subdomain, letters of either case)';
  return undefined;
}

/** Object and pod uids: see {@link uidPattern}; at most {@link uidMaxLength} characters. */
export function uidProblem(value: string): string | undefined {
  const unsafe = pathComponentProblem(value);
  if (unsafe !== undefined) return unsafe;
  if (value.length > uidMaxLength) return `must be no more than ${uidMaxLength} characters`;
  if (!uidPattern.test(value)) return "must consist of ASCII letters, digits and '-', starting with a letter or digit";
  return undefined;
}

/** `IsConfigMapKey`: keys of ConfigMap/Secret data, which become file names in a volume. */
export function configKeyProblem(value: string): string | undefined {
  const unsafe = pathComponentProblem(value);
  if (unsafe !== undefined) return unsafe;
  if (value.length > configKeyMaxLength) return `must be no more than ${configKeyMaxLength} characters`;
  if (value.startsWith('..')) return "must not start with '..'";
  if (!configKeyPattern.test(value)) return "must consist of alphanumerics, '-', '_' or '.'";
  return undefined;
}

/**
 * `validateLocalDescendingPath`: a relative path that stays below the directory it is joined to
 * (subPath, ConfigMap/Secret/downward API item paths, token paths). Empty is allowed here; callers
 * that need a value say so separately.
 */
export function descendingPathProblem(value: string): string | undefined {
  if (value.includes('\0')) return 'must not contain NUL';
  if (value.startsWith('/')) return 'must be a relative path';
  if (value.split('/').includes('..')) return "must not contain '..'";
  return undefined;
}

/** `validatePathNoBacksteps`: host paths may be anywhere but must not use '..' to get there. */
export function noBackstepsProblem(value: string): string | undefined {
  if (value.includes('\0')) return 'must not contain NUL';
  if (value.split('/').includes('..')) return "must not contain '..'";
  return undefined;
}

/**
 * `validateLocalNonReservedPath`: a file path inside a ConfigMap/Secret/projected/downward API
 * volume. Like {@link descendingPathProblem}, non-empty, and not starting with '..' (the atomic
 * writer reserves `..data` and `..<timestamp>` names).
 */
export function volumeItemPathProblem(value: string): string | undefined {
  if (value === '') return 'must not be empty';
  const problem = descendingPathProblem(value);
  if (problem !== undefined) return problem;
  if (value.startsWith('..')) return "must not start with '..'";
  return undefined;
}
