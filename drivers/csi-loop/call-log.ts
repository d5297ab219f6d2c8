/**
 * The ordered log of CSI calls served, for tests and the dashboard to assert against. Entries
 * carry the volume id and paths only, never request bodies, so no secret can reach it.
 * `seq` is assigned when the call arrives; an entry is added when the call completes (a hanging
 * call appears once its caller gives up). list() returns entries ordered by seq.
 */
export interface CallLogEntry {
  seq: number;
  /** ISO time the call arrived. */
  time: string;
  method: string;
  volumeId?: string;
  targetPath?: string;
  stagingPath?: string;
  /** gRPC status name of the outcome ("OK", "FAILED_PRECONDITION", …). */
  code: string;
  message?: string;
  durationMs: number;
}

const MAX_ENTRIES = 10_000;

export class CallLog {
  private seq = 0;
  private entries: CallLogEntry[] = [];

  nextSeq(): number {
    this.seq += 1;
    return this.seq;
  }

  add(entry: CallLogEntry): void {
    this.entries.push(entry);
    if (this.entries.length > MAX_ENTRIES) {
      this.entries.splice(0, this.entries.length - MAX_ENTRIES);
    }
  }

  list(): CallLogEntry[] {
    return [...this.entries].sort((a, b) => a.seq - b.seq);
  }

  clear(): void {
    this.entries = [];
  }
}
