/**
 * Kubernetes resource quantities ("1Gi", "500M", "1.5Gi", "100") as byte counts.
 * Numbers are exact up to 2^53 bytes (8 PiB), far beyond any volume here.
 */

const binarySuffixes: Record<string, number> = {
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
const decimalSuffixes: Record<string, number> = {
  m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
};

export class InvalidQuantityError extends Error {
  override readonly name = 'InvalidQuantityError';
  constructor(readonly value: string) {
    super(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(value)}`);
  }
}

export function isInvalidQuantityError(err: unknown): err is InvalidQuantityError {
  return err instanceof InvalidQuantityError;
}

/** Parses a quantity into a number of base units (bytes for storage). Throws {@link InvalidQuantityError}. */
export function parseQuantity(value: string): number {
  const match = /^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?$/.exec(value.trim());
  if (match === null) throw new InvalidQuantityError(value);
  const number = Number(match[1]);
  const suffix = match[2] ?? '';
  let factor: number | undefined = binarySuffixes[suffix] ?? decimalSuffixes[suffix];
  if (factor === undefined && /^[eE]/.test(suffix)) factor = 10 ** Number(suffix.slice(1));
  if (factor === undefined || !Number.isFinite(number)) throw new InvalidQuantityError(value);
  return Math.ceil(number * factor);
}

/** Formats bytes the way `resource.Quantity` prints binary-SI values: `1Gi`, `1536Mi`, `100`. */
export function formatBinaryQuantity(bytes: number): string {
  if (bytes === 0) return '0';
  for (const [suffix, factor] of Object.entries(binarySuffixes).reverse()) {
    if (bytes % factor === 0) return `${bytes / factor}${suffix}`;
  }
  return String(bytes);
}
