/**
 * Validating request bodies against the contract's schemas, with 400 messages that name the
 * offending field (`volume: Required`, `podUid: expected string, received number`).
 */
import type { z } from 'zod';
import { apiErrorBody, type ApiErrorBody } from './api-error.ts';

/** The largest request body the agent reads; larger ones get 413. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;

/** A request body that is not valid JSON or breaks the endpoint's schema (HTTP 400). */
export class InvalidRequestBodyError extends Error {
  override readonly name = 'InvalidRequestBodyError';

  constructor(
    /** The path of the (first) offending field, e.g. `podUid`; `body` for the body as a whole. */
    readonly field: string,
    /** Every problem, `<path>: <problem>`, joined with `; `. */
    message: string,
  ) {
    super(message);
  }

  /** The 400 response body. */
  toErrorBody(): ApiErrorBody {
    return apiErrorBody('bad-request', this.message, { field: this.field });
  }
}

/** True for an {@link InvalidRequestBodyError}. */
export function isInvalidRequestBodyError(err: unknown): err is InvalidRequestBodyError {
  return err instanceof InvalidRequestBodyError;
}

/** A field path as `a.b[0].c`; `body` for the root. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? 'body' : out;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** One issue's field path (an unrecognized key counts as the offending field). */
function issueField(issue: z.core.$ZodIssue): string {
  const first = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
  return formatFieldPath(first === undefined ? issue.path : [...issue.path, first]);
}

/** A zod error as `<path>: <problem>` per issue, joined with `; `. */
export function describeZodError(error: z.ZodError): string {
  return error.issues.map((issue) => `${issueField(issue)}: ${issue.message}`).join('; ');
}

/** Shorter messages for type errors: `Required` for a missing field, else what was expected. */
function typeErrorMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code !== 'invalid_type') return undefined;
  if (issue.input === undefined) return 'Required';
  return `expected ${issue.expected}, received ${describeValue(issue.input)}`;
}

/**
 * The body parsed by `schema`. Throws an {@link InvalidRequestBodyError} whose message names
 * each offending field and whose `field` is the first of them.
 */
export function parseRequestBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body, { error: typeErrorMessage });
  if (result.success) return result.data;
  const first = result.error.issues[0];
  throw new InvalidRequestBodyError(first === undefined ? 'body' : issueField(first), describeZodError(result.error));
}

/**
 * Like {@link parseRequestBody} for the raw body text. Malformed JSON (including an empty body)
 * is an {@link InvalidRequestBodyError} for the field `body`.
 */
export function parseJsonRequestBody<S extends z.ZodType>(schema: S, text: string): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InvalidRequestBodyError('body', `body: malformed JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  return parseRequestBody(schema, json);
}
