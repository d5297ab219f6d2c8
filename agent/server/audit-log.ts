/**
 * The audit log of operator actions (resync, retry, unmount): a bounded ring shown as `audit[]`
 * in the snapshot, and one structured log line per entry. Entries are appended whole, after the
 * action's outcome is known; refused actions are recorded like the others. With a file, the ring
 * survives restarts (agent/persistent-ring.ts: loaded at start, written atomically, bounded).
 */
import { AuditEntrySchema, type AuditEntry, type Check } from '../../lib/api/snapshot.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';
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
}

export class AuditLog {
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

  /** Appends an entry, logs it at info and returns it. */
  record(record: AuditRecord): AuditEntry {
    const entry: AuditEntry = { time: this.clock.now(), ...record, checks: record.checks.map((c) => ({ ...c })) };
    // A new array per append: snapshots hold the previous one, which must not change under them.
    this.ring.append(entry);
    this.logger.info(`audit: ${entry.action} ${entry.result}`, {
      caller: entry.caller,
      action: entry.action,
      target: entry.target,
      result: entry.result,
      message: entry.message,
      checks: entry.checks,
    });
    this.onAppend();
    return entry;
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
