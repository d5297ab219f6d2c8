/**
 * Request and response bodies of the agent's endpoints other than the snapshot and the stream:
 * health, resync, retry and unmount. Request schemas are strict: an unknown field is a 400
 * naming it.
 */
import { z } from 'zod';
import { AttachVerificationSchema, CheckSchema, EpochMsSchema } from './snapshot.ts';

const CountSchema = z.number().int().nonnegative();

/** `GET /healthz` (always) and `GET /readyz` (once states are synced) answer 200 with this. */
export const HealthResponseSchema = z.object({ status: z.literal('ok') });
/** The 200 body of `/healthz` and `/readyz`. */
export type HealthResponse = z.infer<typeof HealthResponseSchema>;

// WHY: the operator's note on an action

/** The longest incident ID an action request may carry (characters). */
export const MAX_INCIDENT_ID_LENGTH = 128;
/** The longest reason an action request may carry (characters). */
export const MAX_ACTION_REASON_LENGTH = 1024;

// eslint-disable-next-line no-control-regex -- control characters are exactly what the pattern excludes
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;
// eslint-disable-next-line no-control-regex -- a reason may span lines; other control characters are refused
const NO_CONTROL_BUT_NEWLINES = /^[^\u0000-\u0009\u000b-\u001f\u007f]*$/;

/**
 * Why an operator acts, typed in the confirmation dialog and kept in the audit entry: an
 * optional incident ID (one line, e.g. `INC-4711`) and an optional free-text reason. Both are
 * bounded, so an audit entry stays small; a longer one is a 400 naming the field.
 */
export const ActionNoteFields = {
  incidentId: z.string().max(MAX_INCIDENT_ID_LENGTH).regex(NO_CONTROL, 'must be one line without control characters').optional(),
  reason: z.string().max(MAX_ACTION_REASON_LENGTH).regex(NO_CONTROL_BUT_NEWLINES, 'must not contain control characters other than newlines').optional(),
} as const;

/** The note fields of an action request (both optional). */
export interface ActionNote {
  incidentId?: string | undefined;
  reason?: string | undefined;
}

/**
 * `POST /api/v1/resync`: an optional body with the operator's note; an empty body is the same
 * as `{}` (older clients send none).
 */
export const ResyncRequestSchema = z.strictObject({ ...ActionNoteFields });
/** The body of a resync request. */
export type ResyncRequest = z.infer<typeof ResyncRequestSchema>;

/** `POST /api/v1/resync`: what the verification pass found. */
export const ResyncResponseSchema = z.object({
  startedAt: EpochMsSchema,
  finishedAt: EpochMsSchema,
  /** What was scanned on disk: volume directories and mount-table entries. */
  rescanned: z.object({ volumes: CountSchema, mountPoints: CountSchema }),
  /** The attach verification this pass ran (also now in the snapshot). */
  attachVerification: AttachVerificationSchema,
  /** One human-readable line per state change the pass made; empty when everything matched. */
  changes: z.array(z.string()),
});
/** What a resync's verification pass found. */
export type ResyncResponse = z.infer<typeof ResyncResponseSchema>;

/** `POST /api/v1/operations/retry`: clear the backoff of a failed operation so it runs at once. */
/**
 * A kubelet identifier in a request (pod UID, unique volume name): non-empty and without NUL, as
 * the engine's identifiers require, so a bad one is a 400 naming the field, never a 500.
 */
// eslint-disable-next-line no-control-regex -- the NUL is exactly what the pattern excludes
const IdentifierSchema = z.string().min(1).regex(/^[^\u0000]*$/, 'must not contain NUL');

export const RetryOperationRequestSchema = z.strictObject({
  /** The operation's unique volume name (`operations[].volume`). */
  volume: IdentifierSchema,
  /** The operation's pod (`operations[].podUid`); omitted for a volume-level operation. */
  podUid: IdentifierSchema.optional(),
  ...ActionNoteFields,
});
/** The body of a retry request. */
export type RetryOperationRequest = z.infer<typeof RetryOperationRequestSchema>;

/**
 * The 200 body of a retry. 404 when no operation in backoff matches; 409 when the matching
 * operation is running right now.
 */
export const RetryOperationResponseSchema = z.object({
  /** The cleared operation's key, as `operationKey` builds it. */
  cleared: z.string(),
});
/** The 200 body of a retry. */
export type RetryOperationResponse = z.infer<typeof RetryOperationResponseSchema>;

/** `POST /api/v1/unmount`: unmount one pod's volume that no running pod may still use. */
export const UnmountRequestSchema = z.strictObject({
  podUid: IdentifierSchema,
  /** The unique volume name (`actual.volumes[].uniqueVolumeName`). */
  volume: IdentifierSchema,
  ...ActionNoteFields,
});
/** The body of an unmount request. */
export type UnmountRequest = z.infer<typeof UnmountRequestSchema>;

/**
 * The 200 body of an unmount: every check passed and the unmount ran. When a check fails the
 * answer is 409 with the error shape, the reason in `message` and the checks in `checks`.
 */
export const UnmountResponseSchema = z.object({
  podUid: z.string(),
  volume: z.string(),
  /** `uncertain`: TearDown timed out; the mount is marked uncertain and the reconciler retries. */
  outcome: z.enum(['unmounted', 'uncertain', 'failed']),
  /** The TearDown error; `null` when `outcome` is `unmounted`. */
  error: z.string().nullable(),
  /** The checks evaluated before unmounting (all ok). */
  checks: z.array(CheckSchema),
  startedAt: EpochMsSchema,
  finishedAt: EpochMsSchema,
});
/** The 200 body of an unmount. */
export type UnmountResponse = z.infer<typeof UnmountResponseSchema>;

/**
 * The 202 body of an unmount: every check passed and the TearDown was started, but it had not
 * ended when the agent answered. Its outcome shows up later in the snapshot (`operations`,
 * `actual`, and an `audit` entry after the one with `result` `running`).
 */
export const UnmountRunningResponseSchema = z.object({
  podUid: z.string(),
  volume: z.string(),
  status: z.literal('running'),
  /** The operation's key (`operationKey`), as in `operations[]` while it runs. */
  operation: z.string(),
  message: z.string(),
  /** The checks evaluated before starting (all ok). */
  checks: z.array(CheckSchema),
  startedAt: EpochMsSchema,
});
/** The 202 body of an unmount. */
export type UnmountRunningResponse = z.infer<typeof UnmountRunningResponseSchema>;

/**
 * The body of `POST /api/v1/orphans/cleanup` (observe mode with `--allow-orphan-cleanup`):
 * the guarded cleanup of one orphaned pod directory. `dryRun` answers with the plan and does
 * nothing.
 */
export const OrphanCleanupRequestSchema = z.strictObject({
  podUid: IdentifierSchema,
  dryRun: z.boolean().optional(),
  ...ActionNoteFields,
});
export type OrphanCleanupRequest = z.infer<typeof OrphanCleanupRequestSchema>;

/**
 * The 200 body of an orphan cleanup: `planned` (dry run: what would be unmounted, removed and
 * kept), `completed` or `aborted` (what was done), `not-found` (nothing left). A refusal is a
 * 409 with the error shape and `checks`.
 */
export const OrphanCleanupResponseSchema = z.object({
  podUid: z.string(),
  outcome: z.enum(['planned', 'completed', 'aborted', 'not-found']),
  /** Mount points unmounted (or, for `planned`, to unmount), deepest first. */
  unmounts: z.array(z.string()),
  /** Empty directories removed (or to remove), children first. */
  removals: z.array(z.string()),
  /** What stays, with the reason (files are never deleted). */
  kept: z.array(z.object({ path: z.string(), reason: z.string() })),
  failures: z.array(z.object({ path: z.string(), step: z.string(), message: z.string() })),
  checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string() })),
});
export type OrphanCleanupResponse = z.infer<typeof OrphanCleanupResponseSchema>;
