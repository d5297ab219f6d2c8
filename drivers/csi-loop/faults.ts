/**
 * Run-time fault injection, per RPC method name. A fault can delay a call, make it fail with a
 * gRPC status, or make it hang (never answer: the caller's deadline then produces
 * DEADLINE_EXCEEDED). `failNext: N` limits the fault to the next N calls of that method, after
 * which the method behaves normally again; without it the fault stays until cleared.
 */
import { z } from 'zod';
import { Code, parseStatus, statusName } from './csi-error.ts';
import type { CsiMethod } from './csi-types.ts';

export const faultSpecSchema = z
  .object({
    code: z.union([z.string(), z.number().int()]).optional(),
    message: z.string().optional(),
    delayMs: z.number().int().min(0).max(600_000).optional(),
    hang: z.boolean().optional(),
    failNext: z.number().int().min(1).optional(),
  })
  .strict();

export type FaultSpec = z.infer<typeof faultSpecSchema>;

/** A fault as stored: the status resolved to its number, the remaining count explicit. */
export interface Fault {
  /** gRPC status code (0 = OK: delay or hang only). */
  code: number;
  codeName: string;
  message: string | undefined;
  delayMs: number;
  hang: boolean;
  /** Calls this fault still applies to; null = every call until cleared. */
  remaining: number | null;
}

export class InvalidFaultError extends Error {
  override readonly name = 'InvalidFaultError';
}

export function isInvalidFaultError(err: unknown): err is InvalidFaultError {
  return err instanceof InvalidFaultError;
}

/** Validates a fault spec from the control API. */
export function toFault(spec: FaultSpec): Fault {
  const code = spec.code === undefined ? Code.OK : parseStatus(spec.code);
  if (code === undefined) {
    throw new InvalidFaultError(`unknown gRPC status code ${JSON.stringify(spec.code)}`);
  }
  const hang = spec.hang ?? false;
  const delayMs = spec.delayMs ?? 0;
  if (code === Code.OK && !hang && delayMs === 0) {
    throw new InvalidFaultError('a fault needs a non-OK code, delayMs or hang');
  }
  return { code, codeName: statusName(code), message: spec.message, delayMs, hang, remaining: spec.failNext ?? null };
}

export class FaultRegistry {
  private readonly faults = new Map<CsiMethod, Fault>();

  set(method: CsiMethod, fault: Fault): void {
    this.faults.set(method, fault);
  }

  clear(method?: CsiMethod): void {
    if (method === undefined) {
      this.faults.clear();
    } else {
      this.faults.delete(method);
    }
  }

  list(): Record<string, Fault> {
    return Object.fromEntries([...this.faults].map(([method, fault]) => [method, { ...fault }]));
  }

  /** The fault to apply to one call of `method` (consuming one use of a `failNext` fault). */
  take(method: CsiMethod): Fault | undefined {
    const fault = this.faults.get(method);
    if (fault === undefined) {
      return undefined;
    }
    if (fault.remaining !== null) {
      fault.remaining -= 1;
      if (fault.remaining <= 0) {
        this.faults.delete(method);
      }
    }
    return { ...fault };
  }
}
