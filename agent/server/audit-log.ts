/**
 * The audit log of operator actions (resync, retry, unmount): a bounded ring shown as `audit[]`
 * in the snapshot, and one structured log line per entry. Entries are appended whole, after the
 * action's outcome is known; refused actions are recorded like the others. With a file, the ring
 * survives restarts (agent/persistent-ring.ts: loaded at start, written atomically, bounded).
 */
import { AuditEntrySchema, type AuditEntry, type Check } from '../../lib/api/snapshot.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import { truncateMessage } from '../../lib/truncate-message.ts';
import { PersistentRing } from '../persistent-ring.ts';

/** How many entries the ring keeps by default. */
export const DEFAULT_AUDIT_SIZE = 100;

/** The file of the persisted audit log below the agent's state dir. */
export const AUDIT_FILE_NAME = 'audit.jsonl';

/** What an action reports to the audit log; `time` is added from the agent's clock. */
export interface AuditRecord {
  /** The authenticated person or service account (the authenticator's caller), never an address. */
  caller: string;
  action: 'resync' | 'retry' | 'unmount' | 'orphan-cleanup' | 'orphan-cleanup-dry-run';
  /** What the action was about, e.g. `<podUid>/<volume>`; null for node-wide actions. */
  target: string | null;
  checks: Check[];
  result: AuditEntry['result'];
  /** The refusal reason or error; null on plain success. */
  message: string | null;
  /** The caller's groups (the TokenReview's); absent: none known. */
  groups?: readonly string[];
  /** The operator's incident ID from the confirmation dialog; absent or null: none. */
  incidentId?: string | null;
  /** The operator's reason from the confirmation dialog; absent or null: none. */
  reason?: string | null;
}

/** Who asked and why, fixed per request: merged into every entry the request's action records. */
export interface AuditRequestFacts {
  groups: readonly string[];
  incidentId: string | null;
  reason: string | null;
}

/** What an action records into (an {@link AuditLog}, or one bound to a request's facts). */
export interface AuditRecorder {
  record(record: AuditRecord): AuditEntry;
}

// BOUNDS: every string of an entry is kept cut (truncateMessage, with a visible marker), so a
// caller with a long name, many groups, or a driver with a megabyte error cannot grow the
// persisted ring (100 entries) beyond a few MB.

/** Longest caller name, group name, target or incident ID kept. */
export const AUDIT_NAME_LIMIT = 512;
/** Most groups kept per entry (the rest are dropped and counted in a last pseudo-group). */
export const AUDIT_MAX_GROUPS = 32;
/** Longest check detail kept. */
export const AUDIT_DETAIL_LIMIT = 1024;
/** Longest reason kept. */
export const AUDIT_REASON_LIMIT = 1024;
/** Most checks kept per entry. */
export const AUDIT_MAX_CHECKS = 32;

function boundedGroups(groups: readonly string[]): string[] {
  const kept = groups.slice(0, AUDIT_MAX_GROUPS).map((g) => truncateMessage(g, AUDIT_NAME_LIMIT));
  if (groups.length > AUDIT_MAX_GROUPS) kept.push(`... [${groups.length - AUDIT_MAX_GROUPS} more groups]`);
  return kept;
}

function boundedOrNull(value: string | null | undefined, limit: number): string | null {
  return value === undefined || value === null || value === '' ? null : truncateMessage(value, limit);
}

/** The entry an {@link AuditRecord} becomes at `time`: every string bounded. */
export function auditEntry(time: number, record: AuditRecord): AuditEntry {
  return {
    time,
    caller: truncateMessage(record.caller, AUDIT_NAME_LIMIT),
    groups: boundedGroups(record.groups ?? []),
    incidentId: boundedOrNull(record.incidentId, AUDIT_NAME_LIMIT),
    reason: boundedOrNull(record.reason, AUDIT_REASON_LIMIT),
    action: record.action,
    target: record.target === null ? null : truncateMessage(record.target, AUDIT_NAME_LIMIT),
    checks: record.checks.slice(0, AUDIT_MAX_CHECKS).map((c) => ({ ...c, name: truncateMessage(c.name, AUDIT_NAME_LIMIT), detail: truncateMessage(c.detail, AUDIT_DETAIL_LIMIT) })),
    result: record.result,
    message: record.message === null ? null : truncateMessage(record.message),
  };
}

export class AuditLog implements AuditRecorder {
  private readonly ring: PersistentRing<typeof AuditEntrySchema>;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Called after every append (the snapshot publisher marks its state changed). */
    private readonly onAppend: () => void,
    size = DEFAULT_AUDIT_SIZE,
    /** Where the entries persist (`<state dir>/audit.jsonl`); null: memory only. */
    file: string | null = null,
  ) {
    this.ring = new PersistentRing({ file, schema: AuditEntrySchema, capacity: size, clock, logger });
  }

  /** Appends an entry (every string bounded, see {@link auditEntry}), logs it at info and returns it. */
  record(record: AuditRecord): AuditEntry {
    const entry = auditEntry(this.clock.now(), record);
    // A new array per append: snapshots hold the previous one, which must not change under them.
    this.ring.append(entry);
    this.logger.info(`audit: ${entry.action} ${entry.result}`, {
      caller: entry.caller,
      groups: entry.groups,
      incidentId: entry.incidentId,
      reason: entry.reason,
      action: entry.action,
      target: entry.target,
      result: entry.result,
      message: entry.message,
      checks: entry.checks,
    });
    this.onAppend();
    return entry;
  }

  /** A recorder that adds one request's groups and note to every entry its action records. */
  forRequest(facts: AuditRequestFacts): AuditRecorder {
    return { record: (record) => this.record({ ...record, ...facts }) };
  }

  /** The entries, oldest first; the same array until the next append. */
  entries(): AuditEntry[] {
    return this.ring.records();
  }

  /** Writes entries not yet on disk (server close). */
  flush(): Promise<void> {
    return this.ring.flush();
  }
}
