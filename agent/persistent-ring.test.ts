import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeClock } from '../lib/clock/fake-clock.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { nodeDurableWriteFs, type DurableWriteFs } from '../lib/mount-utils/durable-write.ts';
import type { Logger } from '../lib/volume/logger.ts';
import { parseRingText, PersistentRing, ringText } from './persistent-ring.ts';

const RecordSchema = z.object({ n: z.number().int(), text: z.string() });
type Rec = z.infer<typeof RecordSchema>;

function collectingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return { errors, debug: () => undefined, info: () => undefined, warn: () => undefined, error: (msg) => errors.push(msg) };
}

/** A durable-write fs that counts renames (one per completed write) and can fail them. */
function countingFs(): DurableWriteFs & { renames: number; fail: boolean } {
  const fs = {
    ...nodeDurableWriteFs,
    renames: 0,
    fail: false,
    rename: async (from: string, to: string) => {
      if (fs.fail) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      fs.renames++;
      await nodeDurableWriteFs.rename(from, to);
    },
  };
  return fs;
}

/**
 * Waits (real time, with the test-support deadline) until the slow fs of a test is inside its
 * rename: the write before it (open, write, fsync) is real I/O, slow on a loaded machine.
 */
async function waitForRename(condition: () => boolean): Promise<void> {
  await waitFor(() => condition(), { what: 'the write to reach its rename', pollMs: 5 });
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'persistent-ring-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function ring(opts: { file?: string; capacity?: number; logger?: Logger; fs?: DurableWriteFs; clock?: FakeClock; maxBytes?: number } = {}): PersistentRing<typeof RecordSchema> {
  return new PersistentRing({
    file: opts.file ?? join(dir, 'volumescope', 'events.jsonl'),
    schema: RecordSchema,
    capacity: opts.capacity ?? 5,
    clock: opts.clock ?? new FakeClock(),
    logger: opts.logger ?? collectingLogger(),
    ...(opts.fs !== undefined ? { fs: opts.fs } : {}),
    ...(opts.maxBytes !== undefined ? { maxBytes: opts.maxBytes } : {}),
  });
}

describe('PersistentRing', () => {
  it('survives a restart: what one instance appended, the next one loads', async () => {
    const first = ring();
    for (let n = 1; n <= 3; n++) first.append({ n, text: `event ${n}` });
    await first.flush();

    const second = ring();

    expect(second.records()).toEqual([1, 2, 3].map((n) => ({ n, text: `event ${n}` })));
  });

  it('keeps the newest records within its capacity, in memory and in the file', async () => {
    const first = ring({ capacity: 3 });
    for (let n = 1; n <= 7; n++) first.append({ n, text: 'x' });
    await first.flush();

    expect(first.records().map((r) => r.n)).toEqual([5, 6, 7]);
    expect(ring({ capacity: 3 }).records().map((r) => r.n)).toEqual([5, 6, 7]);
  });

  it('keeps the file within maxBytes by leaving the oldest records out', async () => {
    const file = join(dir, 'audit.jsonl');
    const r = ring({ file, capacity: 100, maxBytes: 100 });
    for (let n = 0; n < 10; n++) r.append({ n, text: 'a'.repeat(20) });
    await r.flush();

    const text = readFileSync(file, 'utf8');
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(100);
    expect(text.trimEnd().split('\n').map((l) => (JSON.parse(l) as Rec).n)).toEqual([8, 9]);
  });

  it('writes a burst of appends once, after the delay', async () => {
    const clock = new FakeClock();
    const fs = countingFs();
    const r = ring({ clock, fs });
    for (let n = 0; n < 50; n++) r.append({ n, text: 'burst' });
    expect(fs.renames).toBe(0);

    await clock.advance(200);
    await r.flush();

    expect(fs.renames).toBe(1);
  });

  it('writes one file at a time and ends with the newest records when appends come during a write', async () => {
    const clock = new FakeClock();
    const file = join(dir, 'events.jsonl');
    let release: () => void = () => undefined;
    let inFlight = 0;
    let maxInFlight = 0;
    let started = 0;
    const fs: DurableWriteFs = {
      ...nodeDurableWriteFs,
      rename: async (from, to) => {
        started++;
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        await nodeDurableWriteFs.rename(from, to);
        inFlight--;
      },
    };
    const r = ring({ clock, file, fs });
    r.append({ n: 1, text: 'a' });
    await clock.advance(200);
    await waitForRename(() => started === 1);

    r.append({ n: 2, text: 'b' });
    const flushed = r.flush();
    release();
    await waitForRename(() => started === 2);
    release();
    await flushed;
    await clock.advance(1_000);

    expect(maxInFlight).toBe(1);
    expect(ring({ file }).records().map((x) => x.n)).toEqual([1, 2]);
  });

  it('reads a lazily replaced source once per write, however many changes came before it', async () => {
    const clock = new FakeClock();
    const file = join(dir, 'history.jsonl');
    const r = ring({ clock, file });
    let reads = 0;
    let version = 0;
    const read = (): Rec[] => {
      reads++;
      return [{ n: version, text: 'latest' }];
    };
    for (version = 1; version <= 50; version++) r.replaceLazily(read);
    version = 50;

    await clock.advance(200);
    await r.flush();

    expect(reads).toBe(1);
    expect(ring({ file }).records()).toEqual([{ n: 50, text: 'latest' }]);
  });

  it('skips a corrupt or partial line with an error naming the file and line, keeps the rest, and keeps the original aside', () => {
    const file = join(dir, 'events.jsonl');
    const original = `${JSON.stringify({ n: 1, text: 'a' })}\n{"n": 2, "te\n${JSON.stringify({ n: 'three', text: 'c' })}\n${JSON.stringify({ n: 4, text: 'd' })}\n{"n":5`;
    writeFileSync(file, original);
    const logger = collectingLogger();

    const r = ring({ file, logger });

    expect(r.records()).toEqual([{ n: 1, text: 'a' }, { n: 4, text: 'd' }]);
    expect(logger.errors).toHaveLength(1);
    expect(logger.errors[0]).toContain(`${file}: skipped 3 unreadable record(s), loaded 2`);
    expect(readFileSync(`${file}.corrupt`, 'utf8')).toBe(original);
  });

  it('starts empty, logging the file, when the file cannot be read; a missing file is no error', () => {
    const logger = collectingLogger();

    const missing = ring({ file: join(dir, 'missing.jsonl'), logger });
    expect(missing.records()).toEqual([]);
    expect(logger.errors).toEqual([]);

    // A directory where the file should be: reading it fails with EISDIR.
    const unreadable = ring({ file: dir, logger });
    expect(unreadable.records()).toEqual([]);
    expect(logger.errors[0]).toMatch(/^cannot read .*; starting without its records/);
  });

  it('logs a failed write once, keeps the records, and writes them with the next flush', async () => {
    const file = join(dir, 'events.jsonl');
    const fs = countingFs();
    const logger = collectingLogger();
    const r = ring({ file, fs, logger });
    fs.fail = true;
    r.append({ n: 1, text: 'a' });
    await r.flush();
    r.append({ n: 2, text: 'b' });
    await r.flush();
    expect(logger.errors).toEqual([`cannot write ${file}: renaming the temporary file over it failed: ENOSPC: no space left on device; the previous version is unchanged`]);
    expect(existsSync(file)).toBe(false);

    fs.fail = false;
    await r.flush();

    expect(ring({ file }).records().map((x) => x.n)).toEqual([1, 2]);
  });

  it('reads back exactly what it writes (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ n: fc.integer(), text: fc.string() }), { maxLength: 30 }), fc.integer({ min: 1, max: 40 }), (records, capacity) => {
        const loaded = parseRingText('f', ringText(records, Number.MAX_SAFE_INTEGER), RecordSchema, capacity);
        expect(loaded.skipped).toEqual([]);
        expect(loaded.records).toEqual(records.slice(Math.max(0, records.length - capacity)));
      }),
    );
  });
});
