// How `--mode auto` decides, with the host's answers replaced (PID 1's namespace hidden, a probe
// mount that does not show, …), and once against the real host.
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCsiLoopDriver } from './driver.ts';
import { hostModeProbe, resolveMode, type ModeProbe } from './mode.ts';

const ROOT_PRIVATE = '22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n';
const ROOT_SHARED = '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n';

let dir: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'csi-loop-mode-'));
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** A host where mounts are simulated: `mount` adds to the mount table unless `invisible`. */
function fakeHost(overrides: Partial<ModeProbe> & { invisible?: boolean } = {}): ModeProbe & { mounts: string[]; mountCalls: string[] } {
  const mounts: string[] = ['/'];
  const mountCalls: string[] = [];
  const denied = Object.assign(new Error("EACCES: permission denied, readlink '/proc/1/ns/mnt'"), { code: 'EACCES' });
  return {
    mounts,
    mountCalls,
    isRoot: () => true,
    mountNamespaceEnv: () => undefined,
    mountNamespace: (pid) => (pid === '1' ? Promise.reject(denied) : Promise.resolve('mnt:[4026532177]')),
    mountInfo: () => Promise.resolve(ROOT_PRIVATE),
    mountPoints: () => Promise.resolve([...mounts]),
    mount: (target) => {
      mountCalls.push(target);
      if (overrides.invisible !== true) mounts.push(target);
      return Promise.resolve();
    },
    unmount: (target) => {
      const i = mounts.indexOf(target);
      if (i >= 0) mounts.splice(i, 1);
      return Promise.resolve();
    },
    ...overrides,
  };
}

async function leftovers(): Promise<string[]> {
  return (await fs.readdir(path.join(dir, 'state'))).filter((n) => n.startsWith('.mount-probe-'));
}

describe('resolveMode auto', () => {
  it("decides by the mount probe as root when PID 1's mount namespace cannot be read", async () => {
    const host = fakeHost();

    const decision = await resolveMode('auto', path.join(dir, 'state'), host);

    expect(decision.mode).toBe('privileged');
    expect(decision.reason).toContain("PID 1's mount namespace cannot be read (EACCES: permission denied, readlink '/proc/1/ns/mnt')");
    expect(decision.reason).toContain('a probe tmpfs mount showed in /proc/self/mountinfo and unmounted cleanly');
    expect(host.mountCalls).toHaveLength(1);
    expect(host.mounts).toEqual(['/']);
    expect(await leftovers()).toEqual([]);
  });

  it('falls back to unprivileged, saying why, when the probe mount does not show in mountinfo', async () => {
    const host = fakeHost({ invisible: true });

    const decision = await resolveMode('auto', path.join(dir, 'state'), host);

    expect(decision.mode).toBe('unprivileged');
    expect(decision.reason).toMatch(/but mount reported success but .*\.mount-probe-[^ ]+ did not appear in \/proc\/self\/mountinfo$/);
    expect(await leftovers()).toEqual([]);
  });

  it('falls back to unprivileged, saying why, when the probe mount fails', async () => {
    const host = fakeHost({ mount: () => Promise.reject(new Error('mount: permission denied')) });

    const decision = await resolveMode('auto', path.join(dir, 'state'), host);

    expect(decision).toMatchObject({ mode: 'unprivileged', requested: 'auto' });
    expect(decision.reason).toContain('failed: mount: permission denied');
    expect(await leftovers()).toEqual([]);
  });

  it('keeps the probe directory when the probe mount cannot be unmounted', async () => {
    const host = fakeHost({ unmount: () => Promise.reject(new Error('umount: target is busy')) });

    const decision = await resolveMode('auto', path.join(dir, 'state'), host);

    expect(decision.mode).toBe('unprivileged');
    expect(decision.reason).toContain('could not be unmounted: umount: target is busy');
    expect(await leftovers()).toHaveLength(1);
  });

  it.each([
    { name: "in PID 1's mount namespace", host: () => fakeHost({ mountNamespace: () => Promise.resolve('mnt:[4026531841]') }), want: "running in PID 1's mount namespace (mnt:[4026531841]): mounts would land on the host; pass --mode privileged to mount anyway" },
    { name: 'with PID 1 hidden and a shared root mount', host: () => fakeHost({ mountInfo: () => Promise.resolve(ROOT_SHARED) }), want: 'the root mount is shared, so mounts would propagate to other namespaces' },
    { name: 'when not root', host: () => fakeHost({ isRoot: () => false }), want: 'not running as root' },
  ])('stays unprivileged without probing $name', async ({ host, want }) => {
    const h = host();

    const decision = await resolveMode('auto', path.join(dir, 'state'), h);

    expect(decision.mode).toBe('unprivileged');
    expect(decision.reason).toContain(want);
    expect(h.mountCalls).toEqual([]);
  });

  it('trusts VOLUMESCOPE_MOUNT_NS=1 for the namespace and still probes', async () => {
    const host = fakeHost({ mountNamespaceEnv: () => '1', mountNamespace: () => Promise.resolve('mnt:[1]') });

    const decision = await resolveMode('auto', path.join(dir, 'state'), host);

    expect(decision.mode).toBe('privileged');
    expect(decision.reason).toContain('VOLUMESCOPE_MOUNT_NS=1 says the mount namespace is private');
    expect(host.mountCalls).toHaveLength(1);
  });

  it("probes for real with PID 1's namespace hidden: privileged as root in the test runner's private namespace", async () => {
    // Only inside the runner's private namespace may the probe really mount; elsewhere the root
    // mount is presented as shared, so no mount is tried.
    const inRunnerNamespace = process.env.VOLUMESCOPE_MOUNT_NS === '1';
    const hidden: ModeProbe = {
      ...hostModeProbe,
      mountNamespaceEnv: () => undefined,
      mountNamespace: (pid) => (pid === '1' ? Promise.reject(new Error('hidden')) : hostModeProbe.mountNamespace(pid)),
      mountInfo: inRunnerNamespace ? hostModeProbe.mountInfo : () => Promise.resolve(ROOT_SHARED),
    };

    const decision = await resolveMode('auto', path.join(dir, 'state'), hidden);

    expect(decision.mode).toBe(inRunnerNamespace && hostModeProbe.isRoot() ? 'privileged' : 'unprivileged');
    expect((await hostModeProbe.mountPoints()).filter((p) => p.startsWith(dir))).toEqual([]);
    expect(await leftovers()).toEqual([]);
  });
});

describe('startCsiLoopDriver', () => {
  it('logs the mode it chose and why', async () => {
    const lines: string[] = [];
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== '')));
    const driver = await startCsiLoopDriver({ socketPath: path.join(dir, 'csi.sock'), stateDir: path.join(dir, 'state'), driverName: 'd.example.com', nodeId: 'n', mode: 'unprivileged', logger: pino(sink) });
    await driver.close();

    const line = lines.map((l) => JSON.parse(l) as { msg: string; mode?: string; reason?: string }).find((l) => l.reason !== undefined);
    expect(line).toMatchObject({ mode: 'unprivileged', requestedMode: 'unprivileged', reason: 'requested with --mode unprivileged', version: '0.1.0', msg: 'csi-loop 0.1.0 runs in unprivileged mode: requested with --mode unprivileged' });
  });
});
