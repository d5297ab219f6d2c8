// csi-sanity (kubernetes-csi/csi-test, the upstream conformance suite for CSI drivers) against
// csi-loop, each in its own process: the binary comes from the upstream build
// (scripts/cluster/build.ts, built first if missing), the driver runs with --strict (the
// spec-strict identities csi-sanity checks; see drivers/csi-loop/README.md) on a temp socket, as
// root with the privileged backend in a private mount namespace of its own (`unshare --mount
// --propagation private`), so its loop devices and mounts never reach the host.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { VENDOR_VERSION } from '../../drivers/csi-loop/csi-service.ts';
import { ensureUpstreamBuild } from '../../scripts/cluster/build.ts';
import { childEnv, ManagedProcess, waitUntil } from '../../scripts/demo/process.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const UNSHARE = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
const PRIVILEGED = process.getuid?.() === 0 && UNSHARE !== undefined;
const MODE = PRIVILEGED ? 'privileged' : 'unprivileged';

const upstream = await ensureUpstreamBuild();
const sanityBinary = upstream.manifest.binaries.find((b) => b.binary === 'csi-sanity');
if (sanityBinary === undefined) {
  throw new Error(`the upstream build in ${upstream.dir} has no csi-sanity`);
}

/** ginkgo's closing line: `SUCCESS! -- 56 Passed | 0 Failed | 1 Pending | 46 Skipped`. */
interface GinkgoSummary {
  outcome: string;
  passed: number;
  failed: number;
  pending: number;
  skipped: number;
}

function parseGinkgoSummary(output: string): GinkgoSummary | null {
  const match = /(SUCCESS|FAIL)! -- (\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped/.exec(output);
  if (match === null) return null;
  const [, outcome = '', passed, failed, pending, skipped] = match;
  return { outcome, passed: Number(passed), failed: Number(failed), pending: Number(pending), skipped: Number(skipped) };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('csi-sanity against csi-loop', () => {
  it(`csi-sanity ${sanityBinary.version} passes against csi-loop ${VENDOR_VERSION} (${MODE} backend, --strict): 0 failed`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'csi-sanity-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const socket = join(dir, 'csi.sock');
    const driverArgs = [
      '--import',
      'tsx',
      join(root, 'drivers', 'csi-loop', 'main.ts'),
      `--endpoint=unix://${socket}`,
      `--state-dir=${join(dir, 'state')}`,
      '--node-id=csi-sanity-node',
      '--strict',
      `--mode=${MODE}`,
    ];
    const driver = ManagedProcess.start({
      name: 'csi-loop',
      ...(PRIVILEGED && UNSHARE !== undefined
        ? { command: UNSHARE, args: ['--mount', '--propagation', 'private', '--', process.execPath, ...driverArgs] }
        : { args: driverArgs }),
      cwd: root,
      env: childEnv(PRIVILEGED ? { VOLUMESCOPE_MOUNT_NS: '1' } : {}),
      logFile: join(dir, 'csi-loop.log'),
    });
    cleanups.push(() => driver.stop());
    await waitUntil('the csi-loop socket', () => Promise.resolve(existsSync(socket)), { deadlineMs: 60_000, process: driver });

    const sanityLog = join(dir, 'csi-sanity.log');
    const sanity = ManagedProcess.start({
      name: 'csi-sanity',
      command: join(upstream.dir, 'bin', 'csi-sanity'),
      args: [
        `--csi.endpoint=unix://${socket}`,
        `--csi.mountdir=${join(dir, 'mount')}`,
        `--csi.stagingdir=${join(dir, 'staging')}`,
        '--ginkgo.no-color',
      ],
      cwd: dir,
      env: childEnv(),
      logFile: sanityLog,
    });
    cleanups.push(() => sanity.stop());
    const exit = await sanity.exited;
    const output = await readFile(sanityLog, 'utf8');
    const summary = parseGinkgoSummary(output);

    const context = `csi-sanity output (tail):\n${output.slice(-4000)}`;
    expect(summary, context).not.toBeNull();
    expect(summary?.failed, context).toBe(0);
    expect(summary?.passed, context).toBeGreaterThan(0);
    expect(summary?.outcome, context).toBe('SUCCESS');
    expect(exit, context).toEqual({ code: 0, signal: null });

    // The driver is still healthy, stops cleanly, and every volume csi-sanity made is deleted.
    expect(driver.exitInfo).toBeNull();
    expect(await driver.stop()).toEqual({ code: 0, signal: null });
    const state = JSON.parse(await readFile(join(dir, 'state', 'state.json'), 'utf8')) as { volumes: Record<string, unknown> };
    expect(Object.keys(state.volumes)).toEqual([]);
  });
});
