import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeMountInfoField,
  formatMountInfoLine,
  isMountInfoParseError,
  MountInfoFile,
  parseMountInfo,
  parseMountInfoLine,
  readMountInfo,
  unescapeMountInfoField,
} from './mountinfo.ts';
import type { MountInfo } from './mountinfo.ts';

describe('parseMountInfoLine', () => {
  it.each<{ name: string; line: string; want: Partial<MountInfo> }>([
    {
      name: 'the proc(5) example line yields every field',
      line: '36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue',
      want: {
        id: 36,
        parentId: 35,
        major: 98,
        minor: 0,
        root: '/mnt1',
        mountPoint: '/mnt2',
        mountOptions: ['rw', 'noatime'],
        optionalFields: ['master:1'],
        fsType: 'ext3',
        source: '/dev/root',
        superOptions: ['rw', 'errors=continue'],
      },
    },
    {
      name: 'a line without optional fields has an empty list',
      line: '25 24 0:23 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=65536k',
      want: { optionalFields: [], fsType: 'tmpfs', source: 'tmpfs', mountPoint: '/dev/shm' },
    },
    {
      name: 'several optional fields are all kept in order',
      line: '100 29 0:50 / /a rw shared:7 master:3 propagate_from:2 unbindable - tmpfs none rw',
      want: { optionalFields: ['shared:7', 'master:3', 'propagate_from:2', 'unbindable'] },
    },
    {
      name: 'a space in the mount point is decoded from \\040',
      line: '64 63 0:39 /a /tmp/x/b\\040c rw,relatime - tmpfs none rw',
      want: { mountPoint: '/tmp/x/b c', root: '/a' },
    },
    {
      name: 'tab, newline and backslash escapes are decoded in root, mount point and source',
      line: '70 1 8:1 /r\\011oot /m\\012nt\\134x rw - ext4 /dev/sd\\040a rw',
      want: { root: '/r\toot', mountPoint: '/m\nnt\\x', source: '/dev/sd a' },
    },
    {
      name: 'a mount point whose directory was deleted keeps the kernel suffix',
      line: '80 1 0:40 / /var/lib/old\\040(deleted) rw - tmpfs tmpfs rw',
      want: { mountPoint: '/var/lib/old (deleted)' },
    },
    {
      name: 'an empty source (two spaces in a row) is the empty string, not a shifted field',
      line: '81 1 0:41 / /x rw - tmpfs  rw,size=10k',
      want: { fsType: 'tmpfs', source: '', superOptions: ['rw', 'size=10k'] },
    },
    {
      name: 'a fuse subtype and a network source are kept verbatim',
      line: '90 1 0:60 / /mnt/s rw,nosuid - fuse.sshfs user@host:/srv rw,user_id=0',
      want: { fsType: 'fuse.sshfs', source: 'user@host:/srv' },
    },
    {
      name: 'an nsfs root that is not a path is kept',
      line: '91 1 0:4 net:[4026531992] /run/netns/a rw - nsfs nsfs rw',
      want: { root: 'net:[4026531992]', mountPoint: '/run/netns/a' },
    },
    {
      name: 'a mount point named like the separator does not end the optional fields early',
      line: '92 1 0:42 / /- rw shared:1 - tmpfs tmpfs rw',
      want: { mountPoint: '/-', optionalFields: ['shared:1'], fsType: 'tmpfs' },
    },
    {
      name: 'non-ASCII UTF-8 paths survive next to escapes',
      line: '93 1 0:43 / /data/caf\u00e9\\040\u00fcber rw - tmpfs tmpfs rw',
      want: { mountPoint: '/data/caf\u00e9 \u00fcber' },
    },
    {
      name: 'large device numbers are parsed',
      line: '94 1 259:1048575 / /big rw - ext4 /dev/nvme0n1p1 rw',
      want: { major: 259, minor: 1048575 },
    },
  ])('$name', ({ line, want }) => {
    expect(parseMountInfoLine(line)).toMatchObject(want);
  });

  it.each([
    { name: 'a line with too few fields', line: '36 35 98:0 / /mnt rw - ext3', want: /wrong number of fields/ },
    { name: 'a line without the separator', line: '36 35 98:0 / /mnt rw shared:1 x ext3 /dev/root rw', want: /missing "-" separator/ },
    { name: 'a line with an extra field after the separator', line: '36 35 98:0 / /mnt rw - ext3 /dev/root rw extra', want: /expected 3 fields after "-"/ },
    { name: 'a non-numeric mount id', line: 'x 35 98:0 / /mnt rw - ext3 /dev/root rw', want: /invalid mount id/ },
    { name: 'a malformed major:minor', line: '36 35 98-0 / /mnt rw - ext3 /dev/root rw', want: /invalid major:minor/ },
  ])('rejects $name with a MountInfoParseError', ({ line, want }) => {
    let caught: unknown;
    try {
      parseMountInfoLine(line, 7);
    } catch (err) {
      caught = err;
    }
    expect(isMountInfoParseError(caught)).toBe(true);
    expect((caught as Error).message).toMatch(want);
    expect(caught).toMatchObject({ lineNumber: 7, line });
  });
});

describe('parseMountInfo', () => {
  it('parses every line, skips the trailing newline and reports the failing line number', () => {
    const text = '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:5 / /proc rw - proc proc rw\n';
    expect(parseMountInfo(text).map((e) => e.mountPoint)).toEqual(['/', '/proc']);
    expect(() => parseMountInfo(`${text}broken line\n`)).toThrow(/line 3/);
  });
});

describe('escaping', () => {
  it.each([
    ['a b', 'a\\040b'],
    ['a\tb', 'a\\011b'],
    ['a\nb', 'a\\012b'],
    ['a\\b', 'a\\134b'],
    ['plain', 'plain'],
  ])('escapes %j as %j and decodes it back', (plain, escaped) => {
    expect(escapeMountInfoField(plain)).toBe(escaped);
    expect(unescapeMountInfoField(escaped)).toBe(plain);
  });

  it('round-trips any entry through formatMountInfoLine and parseMountInfoLine', () => {
    const text = fc.string({ unit: 'binary', minLength: 1 }).filter((s) => !s.includes(','));
    const entry = fc.record({
      id: fc.nat(),
      parentId: fc.nat(),
      major: fc.nat(4095),
      minor: fc.nat(1048575),
      root: text.map((s) => `/${s}`),
      mountPoint: text.map((s) => `/${s}`),
      mountOptions: fc.array(text, { minLength: 1 }),
      optionalFields: fc.array(text.filter((s) => s !== '-')),
      fsType: text,
      source: fc.string({ unit: 'binary' }),
      superOptions: fc.array(text, { minLength: 1 }),
    });
    fc.assert(
      fc.property(entry, (e) => {
        expect(parseMountInfoLine(formatMountInfoLine(e))).toEqual(e);
      }),
    );
  });
});

describe('readMountInfo', () => {
  it('reads a fixture file given as the path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'volumescope-mountinfo-'));
    try {
      const file = join(dir, 'mountinfo');
      await writeFile(file, '5 1 0:40 / /fixture\\040mnt rw - tmpfs tmpfs rw\n');
      expect(await readMountInfo(file)).toEqual([
        expect.objectContaining({ id: 5, mountPoint: '/fixture mnt', fsType: 'tmpfs' }),
      ]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('reads the calling process table by default, which always contains the root mount', async () => {
    const entries = await readMountInfo();
    expect(entries.some((e) => e.mountPoint === '/')).toBe(true);
  });
});

describe('MountInfoFile', () => {
  it('reads the file again for each call, parsing only a text it has not seen last, and gives each caller its own array', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'volumescope-mountinfo-'));
    try {
      const file = join(dir, 'mountinfo');
      const line = '5 1 0:40 / /a rw - tmpfs tmpfs rw\n';
      await writeFile(file, line);
      const table = new MountInfoFile(file);

      const [first, concurrent] = await Promise.all([table.read(), table.read()]);
      const again = await table.read();
      await writeFile(file, `${line}6 1 0:41 / /b rw - tmpfs tmpfs rw\n`);
      const changed = await table.read();

      expect(again).not.toBe(first);
      expect(concurrent).not.toBe(first);
      expect(again[0]).toBe(first[0]); // same text: the parsed entry is reused
      expect(changed.map((e) => e.mountPoint)).toEqual(['/a', '/b']);
      expect(changed[0]).not.toBe(first[0]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});
