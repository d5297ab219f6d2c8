/**
 * A bounded ring of JSON records (the agent's recent events, its audit log) that survives agent
 * restarts: kept in memory for the snapshot and mirrored to one JSON-lines file below the root
 * dir (`<root>/volumescope/events.jsonl`, `audit.jsonl`).
 *
 * - Bounded: at most `capacity` records and `maxBytes` of file; the oldest go first. The file is
 *   rewritten whole (compacted) at every write, so it never grows beyond the bounds.
 * - Atomic and durable: every write goes through `writeFileDurably` (temp file, fsync, rename,
 *   fsync of the directory), so a reader or a restarted agent sees the previous version or the
 *   new one, never half a file.
 * - Coalesced: appends are written `writeDelayMs` later (injected clock), one write at a time, so
 *   an event storm costs one write per delay, not one per event. {@link flush} writes now (stop).
 * - Loaded at start, synchronously (a bounded file): a line that is not JSON or does not fit the
 *   schema is skipped with an error naming the file and the line, and the rest is kept; the
 *   original file is copied aside (`<file>.corrupt`) before anything overwrites it, so nothing
 *   is lost. An unreadable file is logged the same way. Neither stops the agent.
 * - A failed write is logged (once per failure streak, naming the file and the step) and retried
 *   with the next append or flush; the records stay in memory.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { z } from 'zod';
import type { Clock, TimerHandle } from '../lib/clock/clock.ts';
import { isDurableWriteError, writeFileDurably, type DurableWriteFs } from '../lib/mount-utils/durable-write.ts';
import { errorMessage } from '../lib/volume/errors.ts';
import type { Logger } from '../lib/volume/logger.ts';

/** The default file size limit (1 MiB): at 100 records, 10 KiB each. */
export const DEFAULT_RING_FILE_BYTES = 1024 * 1024;
/** The default delay between an append and its write. */
export const DEFAULT_RING_WRITE_DELAY_MS = 200;

export interface PersistentRingOptions<S extends z.ZodType> {
  /** The JSON-lines file; null: memory only (observe mode, tests). */
  file: string | null;
  schema: S;
  capacity: number;
  clock: Clock;
  logger: Logger;
  /** Largest file written, in bytes (default 1 MiB); the oldest records are left out to fit. */
  maxBytes?: number;
  writeDelayMs?: number;
  fs?: DurableWriteFs;
}

/** What {@link loadRing} found in a file. */
export interface LoadedRing<T> {
  records: T[];
  /** `<file>:<line>: <why>` for each line that was skipped; empty when all parsed. */
  skipped: string[];
}

/**
 * Parses a JSON-lines text: every line that is JSON and fits the schema, in order, the last
 * `capacity` of them. Blank lines are ignored. Pure; never throws.
 */
export function parseRingText<S extends z.ZodType>(file: string, text: string, schema: S, capacity: number): LoadedRing<z.output<S>> {
  const records: z.output<S>[] = [];
  const skipped: string[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      skipped.push(`${file}:${index + 1}: not JSON (${JSON.stringify(line.slice(0, 40))}${line.length > 40 ? '…' : ''})`);
      return;
    }
    const parsed = schema.safeParse(value);
    if (parsed.success) records.push(parsed.data);
    else skipped.push(`${file}:${index + 1}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ')}`);
  });
  return { records: records.slice(Math.max(0, records.length - capacity)), skipped };
}

/** The file text of `records`: the newest that fit `maxBytes`, one JSON line each. */
export function ringText(records: readonly unknown[], maxBytes: number): string {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    const line = `${JSON.stringify(records[i])}\n`;
    bytes += Buffer.byteLength(line);
    if (bytes > maxBytes) break;
    lines.push(line);
  }
  return lines.reverse().join('');
}

function errnoCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export class PersistentRing<S extends z.ZodType> {
  private items: z.output<S>[];
  private readonly file: string | null;
  private readonly capacity: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly maxBytes: number;
  private readonly writeDelayMs: number;
  private readonly fs: DurableWriteFs | undefined;
  private timer: TimerHandle | null = null;
  private writing: Promise<void> | null = null;
  private dirty = false;
  private failing = false;
  /** The source of the records after {@link replaceLazily}, read when they are next needed. */
  private pending: (() => readonly z.output<S>[]) | null = null;

  constructor(opts: PersistentRingOptions<S>) {
    this.file = opts.file;
    this.capacity = Math.max(1, opts.capacity);
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.maxBytes = opts.maxBytes ?? DEFAULT_RING_FILE_BYTES;
    this.writeDelayMs = opts.writeDelayMs ?? DEFAULT_RING_WRITE_DELAY_MS;
    this.fs = opts.fs;
    this.items = this.file === null ? [] : this.load(this.file, opts.schema);
  }

  /** The records, oldest first; the same array until the next append (snapshots hold it). */
  records(): z.output<S>[] {
    if (this.pending !== null) {
      const records = this.pending();
      this.pending = null;
      this.items = records.slice(Math.max(0, records.length - this.capacity));
    }
    return this.items;
  }

  /** Appends a record (a new array: snapshots hold the previous one) and schedules the write. */
  append(record: z.output<S>): void {
    const next = [...this.records(), record];
    this.items = next.length > this.capacity ? next.slice(next.length - this.capacity) : next;
    this.markDirty();
  }

  private markDirty(): void {
    if (this.file === null) return;
    this.dirty = true;
    this.schedule();
  }

  /**
   * Replaces every record with what `read` answers when the records are next needed (read or
   * written), and schedules the write: a burst of changes costs one `read`, not one per change.
   * The newest `capacity` of them are kept.
   */
  replaceLazily(read: () => readonly z.output<S>[]): void {
    this.pending = read;
    this.markDirty();
  }

  /** Writes what is not written yet, now; resolves when the file is current (or the write failed, logged). */
  async flush(): Promise<void> {
    while (this.writing !== null) await this.writing;
    // A write that ended meanwhile may have re-armed the timer: this write takes its place.
    if (this.timer !== null) {
      this.clock.clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.dirty) await this.write();
  }

  /**
   * Arms the delayed write unless one is armed or running (a running one re-arms when done).
   * One write at a time: two could rename in the wrong order and leave the older text.
   */
  private schedule(): void {
    if (this.timer !== null || this.writing !== null) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      // A flush started a write meanwhile; its end re-arms the timer if still dirty.
      if (this.writing === null) void this.write();
    }, this.writeDelayMs);
  }

  private load(file: string, schema: S): z.output<S>[] {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') this.logger.error(`cannot read ${file}; starting without its records: ${errorMessage(err)}`, { file });
      return [];
    }
    const { records, skipped } = parseRingText(file, text, schema, this.capacity);
    if (skipped.length > 0) {
      const aside = `${file}.corrupt`;
      let kept = `the original is kept as ${aside}`;
      try {
        copyFileSync(file, aside);
      } catch (err) {
        kept = `copying the original to ${aside} failed: ${errorMessage(err)}`;
      }
      this.logger.error(`${file}: skipped ${skipped.length} unreadable record(s), loaded ${records.length}; ${kept}`, { file, skipped: skipped.slice(0, 10) });
    }
    return records;
  }

  private write(): Promise<void> {
    const file = this.file;
    if (file === null) return Promise.resolve();
    this.dirty = false;
    const text = ringText(this.records(), this.maxBytes);
    const run = async (): Promise<void> => {
      try {
        await mkdir(dirname(file), { recursive: true, mode: 0o750 });
        await writeFileDurably(file, text, { mode: 0o600, ...(this.fs !== undefined ? { fs: this.fs } : {}) });
        if (this.failing) this.logger.info(`${file} is written again`, { file });
        this.failing = false;
      } catch (err) {
        // Written again with the next append or flush; the records stay in memory meanwhile.
        this.dirty = true;
        // A DurableWriteError names the file and the step itself.
        if (!this.failing) this.logger.error(isDurableWriteError(err) ? err.message : `cannot write ${file}: ${errorMessage(err)}`, { file });
        this.failing = true;
      }
    };
    const writing = run().finally(() => {
      this.writing = null;
      // Appends during the write were held back; write them now (after the delay).
      if (this.dirty && !this.failing) this.schedule();
    });
    this.writing = writing;
    return writing;
  }
}
