/**
 * Parses the capacity strings the driver accepts in `volume_context["capacity"]` and on the
 * control API: a plain byte count ("1048576") or a Kubernetes-style quantity with a binary
 * ("Ki", "Mi", "Gi", "Ti") or decimal ("k", "M", "G", "T") suffix. Fractions are not accepted.
 */
const SUFFIXES: Readonly<Record<string, number>> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

export class InvalidQuantityError extends Error {
  override readonly name = 'InvalidQuantityError';
}

export function isInvalidQuantityError(err: unknown): err is InvalidQuantityError {
  return err instanceof InvalidQuantityError;
}

/** Returns the number of bytes `text` stands for; throws InvalidQuantityError otherwise. */
export function parseQuantity(text: string): number {
  const match = /^([0-9]+)([a-zA-Z]*)$/.exec(text.trim());
  const digits = match?.[1];
  const suffix = match?.[2] ?? '';
  const factor = SUFFIXES[suffix];
  if (digits === undefined || factor === undefined) {
    throw new InvalidQuantityError(`invalid quantity ${JSON.stringify(text)}: want <digits>[Ki|Mi|Gi|Ti|k|M|G|T]`);
  }
  const bytes = Number(digits) * factor;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InvalidQuantityError(`invalid quantity ${JSON.stringify(text)}: must be a positive byte count below 2^53`);
  }
  return bytes;
}
