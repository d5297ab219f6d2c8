/**
 * The audit log of operator actions (resync, retry, unmount): a bounded ring shown as `audit[]`
 * in the snapshot, and one structured log line per entry. Entries are appended whole, after the
 * action's outcome is known; refused actions are recorded like the others.
 */
import type { AuditEntry, Check } from '../../lib/api/snapshot.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import type { Logger } from '../../lib/volume/logger.ts';

/** How many entries the ring keeps by default. */
export const DEFAULT_AUDIT_SIZE = 100;

/** What an action reports to the audit log; `time` is added from the agent's clock. */
export interface AuditRecord {
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
  private items: AuditEntry[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Called after every append (the snapshot publisher marks its state changed). */
    private readonly onAppend: () => void,
    private readonly size = DEFAULT_AUDIT_SIZE,
  ) {}

  /** Appends an entry, logs it at info and returns it. */
  record(record: AuditRecord): AuditEntry {
    const entry: AuditEntry = { time: this.clock.now(), ...record, checks: record.checks.map((c) => ({ ...c })) };
    // A new array per append: snapshots hold the previous one, which must not change under them.
    const next = [...this.items, entry];
    this.items = next.length > this.size ? next.slice(next.length - this.size) : next;
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
    return this.items;
  }
}
