// StateStore on a state dir shared by several stores (several csi-loop processes): changes
// interleaved from both never lose one another, and a lock left by a dead process is broken.
import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StateStore, type VolumeRecord } from './state-store.ts';

const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'csi-loop-state-'));
  dirs.push(dir);
  return dir;
}

function record(volumeId: string): VolumeRecord {
  return {
    volumeId,
    capacityBytes: 2 ** 20,
    diskPath: `/disks/${volumeId}`,
    volumeContext: {},
    publishedNodes: {},
    devicePath: null,
    formatted: false,
    staged: null,
    publishedTargets: {},
    createdAt: '2026-01-01T00:00:00.000Z',
    ephemeral: false,
    parameters: {},
    nodeExpansionPending: false,
  };
}

/** A change that yields between its read and its write, as a CSI call doing host work does. */
async function addAfterHostWork(store: StateStore, volumeId: string): Promise<void> {
  await store.exclusive(async () => {
    const known = store.list().length;
    await new Promise((resolve) => setImmediate(resolve));
    store.put({ ...record(volumeId), capacityBytes: (known + 1) * 2 ** 20 });
  });
}

describe('StateStore on a shared state dir', () => {
  it('records the nodes of every store opened on the dir', async () => {
    const dir = await tempDir();
    await StateStore.open(dir, 'unprivileged', 'node-b');
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    expect(a.nodes()).toEqual(['node-a', 'node-b']);
  });

  it('loses no change when two stores interleave changes on one dir', async () => {
    const dir = await tempDir();
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    const b = await StateStore.open(dir, 'unprivileged', 'node-b');
    const ids = Array.from({ length: 40 }, (_, i) => `vol-${String(i).padStart(2, '0')}`);

    await Promise.all(ids.map((id, i) => addAfterHostWork(i % 2 === 0 ? a : b, id)));

    // Every change saw all earlier ones (sizes 1..40 MiB, each once), and both stores see all.
    const fresh = await StateStore.open(dir, 'unprivileged');
    await fresh.reload();
    expect(fresh.list().map((v) => v.volumeId)).toEqual(ids);
    expect(fresh.list().map((v) => v.capacityBytes / 2 ** 20).sort((x, y) => x - y)).toEqual(ids.map((_, i) => i + 1));
    expect(await a.exclusive(() => a.list().length)).toBe(40);
    expect(await b.exclusive(() => b.list().length)).toBe(40);
    expect((await fs.readdir(dir)).sort()).toEqual(['state.json']);
  });

  it('a removal in one store is not undone by a later change in the other', async () => {
    const dir = await tempDir();
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    const b = await StateStore.open(dir, 'unprivileged', 'node-b');
    await a.exclusive(() => {
      a.put(record('vol-1'));
      a.put(record('vol-2'));
    });
    await b.exclusive(() => {
      b.remove('vol-1');
    });
    await a.exclusive(() => {
      a.put({ ...record('vol-2'), formatted: true });
    });
    await b.reload();
    expect(b.list().map((v) => [v.volumeId, v.formatted])).toEqual([['vol-2', true]]);
  });

  it('breaks a lock left by a process that is gone', async () => {
    const dir = await tempDir();
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    expect(dead).toBeGreaterThan(0);
    await fs.writeFile(path.join(dir, 'state.lock'), `${dead}\n`);
    const store = await StateStore.open(dir, 'unprivileged', 'node-a');
    await store.exclusive(() => {
      store.put(record('vol-1'));
    });
    expect(store.list().map((v) => v.volumeId)).toEqual(['vol-1']);
    expect(await fs.readdir(dir)).not.toContain('state.lock');
  });

  it('parses state.json again only when it is another version than the one it read or wrote, and then sees every change', async () => {
    const dir = await tempDir();
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    await a.exclusive(() => {
      a.put(record('vol-1'));
    });
    const parse = vi.spyOn(JSON, 'parse');
    try {
      // Unchanged since this store wrote it: nothing is parsed.
      await a.exclusive(() => a.list());
      await a.exclusive(() => a.list());
      expect(parse).not.toHaveBeenCalled();

      // Replaced by another store (rename), then edited in place (as by hand): read each time.
      const b = await StateStore.open(dir, 'unprivileged', 'node-b');
      await b.exclusive(() => {
        b.put({ ...record('vol-1'), formatted: true });
      });
      parse.mockClear();
      expect(await a.exclusive(() => a.get('vol-1')?.formatted)).toBe(true);
      expect(parse).toHaveBeenCalledTimes(1);
      const file = path.join(dir, 'state.json');
      const text = await fs.readFile(file, 'utf8');
      await fs.writeFile(file, text.replace('"formatted": true', '"formatted": false'));
      expect(await a.exclusive(() => a.get('vol-1')?.formatted)).toBe(false);
    } finally {
      parse.mockRestore();
    }
  });

  it('a burst of queued changes takes the lock file once (twice at most on a slow machine), not once per change; another store waiting on the lock loses none of them', async () => {
    // Arrange
    const dir = await tempDir();
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    const b = await StateStore.open(dir, 'unprivileged', 'node-b');
    const lockFile = path.join(dir, 'state.lock');
    // Every hold of the lock ends with its removal (the other store's attempts while it is held fail with EEXIST and remove nothing).
    const rm = vi.spyOn(fs, 'rm');
    try {
      // Act: 10 changes queued at once, and one of the other store queued after the first of them.
      const burst = Array.from({ length: 10 }, (_, i) =>
        a.exclusive(() => {
          a.put(record(`vol-${String(i).padStart(2, '0')}`));
        }),
      );
      const other = b.exclusive(() => {
        b.put(record('vol-b'));
      });
      await Promise.all([...burst, other]);
      const lockReleases = rm.mock.calls.filter(([file]) => file === lockFile).length;

      // Assert: one removal per hold, not one per change: a's burst, b's change (and a second hold of a only if its burst outlasted the 50 ms cap).
      expect(lockReleases).toBeLessThanOrEqual(3);
      expect(await fs.readdir(dir)).not.toContain('state.lock');
      expect(await a.exclusive(() => a.list().length)).toBe(11);
      expect(await b.exclusive(() => b.list().length)).toBe(11);
    } finally {
      rm.mockRestore();
    }
  });

  it('after a change that failed, the next one takes the lock again and reads state.json afresh', async () => {
    const dir = await tempDir();
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    const failing = a.exclusive(() => {
      throw new Error('FAILED_PRECONDITION');
    });
    const next = a.exclusive(() => a.list().length);
    await expect(failing).rejects.toThrow('FAILED_PRECONDITION');
    expect(await next).toBe(0);
    expect(await fs.readdir(dir)).not.toContain('state.lock');
  });

  it('saves a change that modified a record in place (even one that then threw), and writes nothing for a change that only read', async () => {
    // Arrange
    const dir = await tempDir();
    const a = await StateStore.open(dir, 'unprivileged', 'node-a');
    await a.exclusive(() => {
      a.put(record('vol-1'));
      a.put(record('vol-2'));
    });
    const file = path.join(dir, 'state.json');
    const mtime = async () => (await fs.stat(file, { bigint: true })).mtimeNs;

    // Act: only reads.
    const before = await mtime();
    await a.exclusive(() => a.get('vol-1')?.formatted);
    await a.exclusive(() => a.get('vol-missing'));
    const afterReads = await mtime();
    // An in-place change of one record, never put(), and one that throws after changing it.
    await a.exclusive(() => {
      const r = a.get('vol-2');
      if (r !== undefined) r.formatted = true;
    });
    await a
      .exclusive(() => {
        const r = a.get('vol-1');
        if (r !== undefined) r.devicePath = '/dev/loop7';
        throw new Error('mkfs failed');
      })
      .catch(() => undefined);

    // Assert
    expect(afterReads).toBe(before);
    const other = await StateStore.open(dir, 'unprivileged', 'node-b');
    expect(await other.exclusive(() => [other.get('vol-1')?.devicePath, other.get('vol-2')?.formatted])).toEqual(['/dev/loop7', true]);
  });

  it('refuses a state dir written in the other mode', async () => {
    const dir = await tempDir();
    await StateStore.open(dir, 'unprivileged', 'node-a');
    await expect(StateStore.open(dir, 'privileged', 'node-b')).rejects.toThrow(/unprivileged mode/);
  });
});
