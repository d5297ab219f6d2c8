/**
 * gRPC status codes as plain numbers (the values are fixed by the gRPC protocol). The driver
 * uses these instead of grpc-js's `status` enum so codes read from the control API (numbers)
 * and codes of the protocol mix without enum casts.
 */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const CODE_NAMES: readonly string[] = Object.keys(Code);

/**
 * A CSI call outcome other than OK, carrying the gRPC status code the driver answers with.
 * Every handler reports its refusals by throwing one of these; anything else becomes INTERNAL.
 */
export class CsiError extends Error {
  override readonly name = 'CsiError';

  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export function isCsiError(err: unknown): err is CsiError {
  return err instanceof CsiError;
}

/** The gRPC status name for a code (e.g. 9 → "FAILED_PRECONDITION"), or the number as text. */
export function statusName(code: number): string {
  return CODE_NAMES[code] ?? String(code);
}

/**
 * Resolves a gRPC status given by name ("NOT_FOUND", case-insensitive) or number (5, "5").
 * Returns undefined for anything that is not a gRPC status code.
 */
export function parseStatus(value: string | number): number | undefined {
  if (typeof value === 'number' || /^[0-9]+$/.test(value)) {
    const code = Number(value);
    return Number.isInteger(code) && code >= 0 && code < CODE_NAMES.length ? code : undefined;
  }
  const index = CODE_NAMES.indexOf(value.toUpperCase());
  return index < 0 ? undefined : index;
}

/** The error message text of anything thrown. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export const invalidArgument = (message: string): CsiError => new CsiError(Code.INVALID_ARGUMENT, message);
export const notFound = (message: string): CsiError => new CsiError(Code.NOT_FOUND, message);
export const failedPrecondition = (message: string): CsiError => new CsiError(Code.FAILED_PRECONDITION, message);
export const alreadyExists = (message: string): CsiError => new CsiError(Code.ALREADY_EXISTS, message);
export const internal = (message: string): CsiError => new CsiError(Code.INTERNAL, message);
