/**
 * Reading the values of ConfigMaps and Secrets as the API server stores them: `data` of a Secret
 * and `binaryData` of a ConfigMap are base64 (standard alphabet, padded, as Go's
 * `encoding/json` decodes `[]byte`), everything else is UTF-8 text. Errors name the object and
 * the key, never the value.
 */

/** The mode of projected files when the volume sets no `defaultMode` (the API default, 0644). */
export const DEFAULT_FILE_MODE = 0o644;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export class InvalidObjectDataError extends Error {
  override readonly name = 'InvalidObjectDataError';
}

export function isInvalidObjectDataError(err: unknown): err is InvalidObjectDataError {
  return err instanceof InvalidObjectDataError;
}

/** Decodes a base64 value; `what` names it in the error (`secret "s" key "k"`). */
export function decodeBase64Value(value: string, what: string): Buffer {
  if (!BASE64.test(value)) throw new InvalidObjectDataError(`${what} is not valid base64`);
  return Buffer.from(value, 'base64');
}

/** `record[key]` when the record has it as its own property (keys like `__proto__` are valid). */
export function ownValue(record: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
