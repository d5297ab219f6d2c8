/**
 * Parser for `/proc/<pid>/mountinfo` (proc(5), "mountinfo"). One line per mount:
 *
 *     36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *     (1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
 *
 * (7) is zero or more optional fields ended by the lone `-` separator (8). The kernel escapes
 * space, tab, newline and backslash in path-like fields as `\ooo` octal (`\040`, `\011`, `\012`,
 * `\134`); every field is decoded here, so callers compare plain paths. Fields are separated by
 * exactly one space and may be empty (a mount with an empty source prints two spaces), so lines
 * are never split on runs of whitespace.
 *
 * The table is the kernel's view at the moment of reading: callers that act on it (unmount,
 * remove) must read it again right before acting, never keep it.
 */
import { readFile } from 'node:fs/promises';
import { FreshRead } from './fresh-read.ts';

/** One parsed mountinfo line. All strings are decoded (no `\ooo` escapes left). */
export interface MountInfo {
  /** (1) Unique id of the mount (may be reused after an unmount). */
  id: number;
  /** (2) Id of the parent mount (or of itself for the root of the mount tree). */
  parentId: number;
  /** (3) `st_dev` major of files on this filesystem. */
  major: number;
  /** (3) `st_dev` minor of files on this filesystem. */
  minor: number;
  /** (4) Path inside the filesystem that forms the root of this mount: `/` unless a bind mount of a subdirectory. */
  root: string;
  /** (5) Mount point relative to the reading process's root. */
  mountPoint: string;
  /** (6) Per-mount options (`rw`, `nosuid`, `relatime`, ...). */
  mountOptions: string[];
  /** (7) Optional fields such as `shared:1`, `master:2`, `propagate_from:3`, `unbindable`; often empty. */
  optionalFields: string[];
  /** (9) Filesystem type, `type[.subtype]` (e.g. `fuse.sshfs`). */
  fsType: string;
  /** (10) Filesystem-specific source (device, `tmpfs`, `server:/export`); may be the empty string. */
  source: string;
  /** (11) Per-superblock options. */
  superOptions: string[];
}

/** A line that does not follow the mountinfo format. */
export class MountInfoParseError extends Error {
  override readonly name = 'MountInfoParseError';
  constructor(
    message: string,
    /** 1-based line number in the parsed text. */
    readonly lineNumber: number,
    readonly line: string,
  ) {
    super(message);
  }
}

export function isMountInfoParseError(err: unknown): err is MountInfoParseError {
  return err instanceof MountInfoParseError;
}

/** The mountinfo of the calling process. */
export const PROC_SELF_MOUNTINFO = '/proc/self/mountinfo';

/** Fields before the optional ones: id, parent, major:minor, root, mount point, options. */
const LEADING_FIELDS = 6;
/** Fields after the separator: fs type, source, super options. */
const TRAILING_FIELDS = 3;
const MIN_FIELDS = LEADING_FIELDS + 1 + TRAILING_FIELDS;
const ESCAPE = /\\([0-7]{3})/g;

/**
 * Decodes the kernel's `\ooo` octal escapes. Each escape is one byte, and the rest of the text is
 * UTF-8, so the result is rebuilt from bytes rather than from char codes.
 */
export function unescapeMountInfoField(field: string): string {
  if (!field.includes('\\')) return field;
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of field.matchAll(ESCAPE)) {
    parts.push(Buffer.from(field.slice(last, m.index), 'utf8'));
    parts.push(Buffer.of(Number.parseInt(m[1] ?? '0', 8) & 0xff));
    last = m.index + m[0].length;
  }
  parts.push(Buffer.from(field.slice(last), 'utf8'));
  return Buffer.concat(parts).toString('utf8');
}

/** Encodes a value the way the kernel writes it into mountinfo (inverse of {@link unescapeMountInfoField}). */
export function escapeMountInfoField(value: string): string {
  return value.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

function parseId(text: string, what: string, lineNumber: number, line: string): number {
  if (!/^\d+$/.test(text)) {
    throw new MountInfoParseError(`mountinfo line ${lineNumber}: invalid ${what} ${JSON.stringify(text)}`, lineNumber, line);
  }
  return Number.parseInt(text, 10);
}

function splitOptions(text: string): string[] {
  return text === '' ? [] : text.split(',').map(unescapeMountInfoField);
}

/** Parses one mountinfo line (without its newline). `lineNumber` only labels errors. */
export function parseMountInfoLine(line: string, lineNumber = 1): MountInfo {
  const fields = line.split(' ');
  if (fields.length < MIN_FIELDS) {
    throw new MountInfoParseError(
      `wrong number of fields in mountinfo line ${lineNumber} (expected at least ${MIN_FIELDS}, got ${fields.length}): ${line}`,
      lineNumber,
      line,
    );
  }
  const separator = fields.indexOf('-', LEADING_FIELDS);
  if (separator < 0) {
    throw new MountInfoParseError(`mountinfo line ${lineNumber}: missing "-" separator: ${line}`, lineNumber, line);
  }
  if (fields.length - separator - 1 !== TRAILING_FIELDS) {
    throw new MountInfoParseError(
      `mountinfo line ${lineNumber}: expected ${TRAILING_FIELDS} fields after "-", got ${fields.length - separator - 1}: ${line}`,
      lineNumber,
      line,
    );
  }
  const [idText = '', parentText = '', devText = '', root = '', mountPoint = '', options = ''] = fields;
  const [fsType = '', source = '', superOptions = ''] = fields.slice(separator + 1);
  const dev = /^(\d+):(\d+)$/.exec(devText);
  if (dev === null) {
    throw new MountInfoParseError(`mountinfo line ${lineNumber}: invalid major:minor ${JSON.stringify(devText)}`, lineNumber, line);
  }
  return {
    id: parseId(idText, 'mount id', lineNumber, line),
    parentId: parseId(parentText, 'parent id', lineNumber, line),
    major: Number.parseInt(dev[1] ?? '', 10),
    minor: Number.parseInt(dev[2] ?? '', 10),
    root: unescapeMountInfoField(root),
    mountPoint: unescapeMountInfoField(mountPoint),
    mountOptions: splitOptions(options),
    optionalFields: fields.slice(LEADING_FIELDS, separator).map(unescapeMountInfoField),
    fsType: unescapeMountInfoField(fsType),
    source: unescapeMountInfoField(source),
    superOptions: splitOptions(superOptions),
  };
}

/** Parses a whole mountinfo text. Empty lines (the trailing newline) are ignored; any malformed line throws. */
export function parseMountInfo(text: string): MountInfo[] {
  const entries: MountInfo[] = [];
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    if (line === '') continue;
    entries.push(parseMountInfoLine(line, i + 1));
  }
  return entries;
}

/** Formats an entry as a mountinfo line (no newline); `parseMountInfoLine(formatMountInfoLine(e))` equals `e`. */
export function formatMountInfoLine(e: MountInfo): string {
  const opts = (o: string[]): string => o.map(escapeMountInfoField).join(',');
  return [
    String(e.id),
    String(e.parentId),
    `${e.major}:${e.minor}`,
    escapeMountInfoField(e.root),
    escapeMountInfoField(e.mountPoint),
    opts(e.mountOptions),
    ...e.optionalFields.map(escapeMountInfoField),
    '-',
    escapeMountInfoField(e.fsType),
    escapeMountInfoField(e.source),
    opts(e.superOptions),
  ].join(' ');
}

/**
 * Reads and parses a mountinfo file. Every call reads the file again; nothing is cached. Point
 * `path` at a fixture in tests, or at `/proc/<pid>/mountinfo` to see another mount namespace.
 */
export async function readMountInfo(path: string = PROC_SELF_MOUNTINFO): Promise<MountInfo[]> {
  return parseMountInfo(await readFile(path, 'utf8'));
}

/**
 * A mount table file read fresh for every caller, for a mounter that thousands of operations ask
 * at once (a restart confirms every volume, and each asks whether its directory is a mount
 * point): callers that arrive while a read runs share the next read (FreshRead: each still gets a
 * table read after its call began), and a read whose text is the previous read's returns the
 * previous entries instead of parsing them again (the table rarely changes between two reads; it
 * has one line per mount, so parsing it for each of N volumes cost O(N²) with N tmpfs volumes).
 * Each caller gets its own array; the entries are shared, and callers must not change them.
 */
export class MountInfoFile {
  private lastText: string | null = null;
  private lastEntries: readonly MountInfo[] = [];
  private readonly fresh: FreshRead<readonly MountInfo[]>;

  constructor(readonly path: string = PROC_SELF_MOUNTINFO) {
    this.fresh = new FreshRead(async () => {
      const text = await readFile(this.path, 'utf8');
      if (text !== this.lastText) {
        this.lastEntries = parseMountInfo(text);
        this.lastText = text;
      }
      return this.lastEntries;
    });
  }

  /** The table as read after this call began. */
  async read(): Promise<MountInfo[]> {
    return (await this.fresh.get()).slice();
  }
}

/** A source of the current mount table, read fresh on every call. */
export type MountInfoReader = () => Promise<readonly MountInfo[]>;
