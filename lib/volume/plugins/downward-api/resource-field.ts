/**
 * `resourceFieldRef` values of downward API volumes (kubelet `pkg/api/v1/resource`): a
 * container's CPU, memory, ephemeral-storage or hugepages limit or request, divided by the
 * divisor and rounded up. A limit the container does not set is the node's allocatable amount,
 * as in the kubelet (`MergeContainerResourceLimits`).
 *
 * Quantities are computed exactly (BigInt over the decimal digits): "0.1" CPU is 100 millicores,
 * never 100.00000000000001 rounded up to 101.
 */
import type { Container, Pod, ResourceList } from '../../k8s-types.ts';
import { InvalidQuantityError } from '../../quantity.ts';

export interface ResourceFieldSelector {
  containerName?: string;
  resource: string;
  divisor?: string;
}

/** A `resourceFieldRef` names a container or resource that does not exist; texts are the kubelet's. */
export class ResourceFieldError extends Error {
  override readonly name = 'ResourceFieldError';
}

export function isResourceFieldError(err: unknown): err is ResourceFieldError {
  return err instanceof ResourceFieldError;
}

const QUANTITY = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?$/;
const BINARY_POWERS: Record<string, bigint> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL_EXPONENTS: Record<string, number> = { m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** ceil(quantity × 10^scale) exactly: `scale` 0 is `Quantity.Value()`, 3 is `MilliValue()`. */
export function scaledQuantity(value: string, scale: number): bigint {
  const m = QUANTITY.exec(value.trim());
  const whole = m?.[2] ?? '';
  const fraction = m?.[3] ?? '';
  if (m === null || (whole === '' && fraction === '')) throw new InvalidQuantityError(value);
  const suffix = m[4] ?? '';
  let numerator = BigInt(`${whole}${fraction}` || '0');
  let exponent = scale - fraction.length;
  const binary = BINARY_POWERS[suffix];
  if (binary !== undefined) numerator <<= binary;
  else if (/^[eE]/.test(suffix)) exponent += Number(suffix.slice(1));
  else exponent += DECIMAL_EXPONENTS[suffix] ?? 0;
  const negative = m[1] === '-';
  let result: bigint;
  if (exponent >= 0) result = numerator * 10n ** BigInt(exponent);
  else result = ceilDiv(numerator, 10n ** BigInt(-exponent));
  return negative ? -result : result;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/** The container of a pod by name, init containers included (`container x not found` otherwise). */
function findContainerInPod(pod: Pod, containerName: string): Container {
  const found = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) => c.name === containerName);
  if (found === undefined) throw new ResourceFieldError(`container ${containerName} not found`);
  return found;
}

/** The container's limits with CPU, memory and ephemeral-storage filled from `allocatable` where unset or zero. */
function mergedLimits(container: Container, allocatable: ResourceList): ResourceList {
  const limits: ResourceList = { ...(container.resources?.limits ?? {}) };
  for (const name of ['cpu', 'memory', 'ephemeral-storage']) {
    const set = limits[name];
    const cap = allocatable[name];
    if ((set === undefined || scaledQuantity(set, 3) === 0n) && cap !== undefined) limits[name] = cap;
  }
  return limits;
}

/**
 * `ExtractContainerResourceValue` after `MergeContainerResourceLimits`: the value as the decimal
 * text the file holds.
 */
function extractResourceValue(selector: ResourceFieldSelector, container: Container, allocatable: ResourceList): string {
  const divisorText = selector.divisor ?? '';
  const divisorIsZero = divisorText === '' || scaledQuantity(divisorText, 3) === 0n;
  const divisor = divisorIsZero ? '1' : divisorText;
  const limits = mergedLimits(container, allocatable);
  const requests = container.resources?.requests ?? {};
  const [kind, name = ''] = splitOnce(selector.resource, '.');
  const list = kind === 'limits' ? limits : kind === 'requests' ? requests : null;
  if (list !== null && name === 'cpu') {
    return ceilDiv(scaledQuantity(list.cpu ?? '0', 3), scaledQuantity(divisor, 3)).toString();
  }
  if (list !== null && (name === 'memory' || name === 'ephemeral-storage' || name.startsWith('hugepages-'))) {
    return ceilDiv(scaledQuantity(list[name] ?? '0', 0), scaledQuantity(divisor, 0)).toString();
  }
  throw new ResourceFieldError(`unsupported container resource : ${selector.resource}`);
}

/** `ExtractResourceValueByContainerNameAndNodeAllocatable`. */
export function extractResourceValueByContainerName(selector: ResourceFieldSelector, pod: Pod, allocatable: ResourceList): string {
  return extractResourceValue(selector, findContainerInPod(pod, selector.containerName ?? ''), allocatable);
}

function splitOnce(value: string, separator: string): [string, string?] {
  const i = value.indexOf(separator);
  return i < 0 ? [value] : [value.slice(0, i), value.slice(i + separator.length)];
}
