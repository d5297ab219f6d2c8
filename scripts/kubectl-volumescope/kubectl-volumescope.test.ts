/**
 * `kubectl volumescope` against REAL agent processes (agent/main.ts over a manifest directory,
 * with the real csi-loop driver and its fault injection where a state needs CSI), one per pipeline
 * state: mounted, waiting for attach, device mount failing, setup failing with backoff, uncertain,
 * and a pod that is gone while its volume cannot be unmounted. The agent URL and its static token
 * are given on the command line (`--agent-url`, `--token-file`): discovery through the API server
 * and the user's RBAC are e2e/cluster/kubectl-plugin.test.ts.
 *
 * Outputs are compared with files in __snapshots__/ after masking what changes from run to run
 * (times, UIDs of the CSI driver, seq, countdowns, failure counts, temp paths).
 */
import { execFile } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { cleanUpTempDir, makeTempDir, realMountsAllowed } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { CsiLoopProcess } from '../../lib/volume/csi/testing/csi-loop-process.ts';
import { AgentProcess, standInMounter } from '../../agent/node/testing/agent-process.ts';
import { csiClaimObjects, csiDriverObject, csiLoopDriverName, csiPodObject, csiUniqueVolumeName } from '../../agent/node/testing/csi-manifests.ts';
import { podManifest } from '../../agent/node/testing/pod-manifest.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { startObserver } from '../demo/observer.ts';
import { runCli } from './cli.ts';
import { EXIT } from './cli-args.ts';
import { NodeReportSchema, PodReportSchema } from './views.ts';

const execFileAsync = promisify(execFile);
const BIN = fileURLToPath(new URL('./bin.mjs', import.meta.url));
const NODE = 'node-k';
const CSI_TIMEOUT_MS = 1_000;
const DEADLINE_MS = 20_000;
/** Per test: an agent (and a driver) start, a few waits of the real reconciler. */
const TEST_TIMEOUT_MS = 60_000;

interface Env {
  base: string;
  manifestDir: string;
  agent: AgentProcess;
  driver: CsiLoopProcess | null;
  tokenFile: string;
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startEnv(withCsi: boolean): Promise<Env> {
  const base = await makeTempDir('volumescope-kubectl-');
  const rootDir = join(base, 'root');
  const manifestDir = join(base, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  const driver = withCsi ? await CsiLoopProcess.start({ dir: join(base, 'driver'), nodeId: NODE }) : null;
  cleanups.push(async () => {
    await driver?.stop();
    await driver?.forceCleanUp(base);
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  });
  const extraArgs = driver === null ? [] : ['--csi-driver', `${csiLoopDriverName}=${driver.socketPath}`, '--csi-timeout', `${CSI_TIMEOUT_MS}ms`];
  const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: NODE, extraArgs });
  cleanups.push(async () => {
    await agent.stop('SIGKILL');
  });
  if (driver !== null) {
    await agent.waitForSnapshot('the CSI driver is registered', (s) => s.drivers.find((d) => d.name === csiLoopDriverName)?.registered, DEADLINE_MS);
    await writeManifest(manifestDir, 'csidriver.json', [csiDriverObject()]);
  }
  const tokenFile = join(base, 'token');
  await writeFile(tokenFile, agent.token, { mode: 0o600 });
  return { base, manifestDir, agent, driver, tokenFile };
}

async function writeManifest(dir: string, file: string, docs: readonly Record<string, unknown>[] | string): Promise<void> {
  const tmp = join(dir, `.${file}.tmp`);
  await writeFile(tmp, typeof docs === 'string' ? docs : JSON.stringify(docs.length === 1 ? docs[0] : { apiVersion: 'v1', kind: 'List', items: docs }));
  await rename(tmp, join(dir, file));
}

async function addCsiPod(env: Env, name: string, handle: string): Promise<void> {
  await writeManifest(env.manifestDir, `storage-${handle}.json`, csiClaimObjects({ handle }));
  await writeManifest(env.manifestDir, `pod-${name}.json`, [csiPodObject(name, handle, { uid: `${name}-uid` })]);
}

function mountOp(s: Snapshot, volume: string): Snapshot['operations'][number] | undefined {
  return s.operations.find((op) => op.volume === volume && op.operationName === 'volume_mount');
}

/** Runs the CLI in-process; stdout is no TTY (no colour). */
async function cli(args: readonly string[], env: Env | null, extra: { env?: Record<string, string> } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const agentArgs = env === null ? [] : [`--agent-url=${env.agent.baseUrl}`, `--token-file=${env.tokenFile}`];
  const code = await runCli([...args, ...agentArgs], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: extra.env ?? {},
    now: () => Date.now(),
  });
  return { code, stdout, stderr };
}

/**
 * The output with what changes between runs replaced by placeholders. A failing operation flips
 * between `backoff` (waiting for its retry) and `running` (an attempt, e.g. a CSI call hanging
 * until its 1 s deadline) on the real reconciler's schedule, so that word and the next-retry text
 * are masked; the tests assert their forms separately.
 */
function mask(text: string, env: Pick<Env, 'base'>): string {
  return text
    .replaceAll(env.base, '<tmp>')
    .replace(/\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( UTC|Z)?/g, '<time>')
    .replace(/seq \d+/g, 'seq <n>')
    .replace(/retry in \d+:\d\d \(<time>\)|retry in \d+:\d\d|retry due|running \d+ (s|min)( \d+ s)?|(?<=next retry: )running$/gm, '<retry>')
    .replace(/\b(backoff|running)\b(?=(: | failures|, failures| \|))/g, '<backoff|running>')
    .replace(/stuck for \d+ (s|min)( \d+ s)?/g, 'stuck for <d>')
    .replace(/just now|\d+ s ago/g, '<ago>')
    .replace(/×\d+/g, '×<n>')
    .replace(/agent [^ ,]+, mode/g, 'agent <version>, mode')
    // An aggregated event group: `FailedMount, 3 s ago` or `FailedMount ×<n> over 2 s, last …`, by timing.
    .replace(/^- (Warning|Normal) (\w+)[^(]*\(/gm, '- $1 $2 <count and age> (');
}

const snapshotFile = (name: string): string => `./__snapshots__/${name}.txt`;

describe('kubectl volumescope pod against a real agent, one pipeline state each', { timeout: TEST_TIMEOUT_MS }, () => {
  it('mounted: every stage done, exit code 0, the kubelet line empty', async () => {
    const env = await startEnv(false);
    await writeManifest(env.manifestDir, 'pod-web.json', podManifest('web', 'web-uid', { cache: { emptyDir: {} } }));
    await env.agent.waitForSnapshot('web is mounted', (s) => s.actual.volumes.some((v) => v.pods.some((p) => p.podUid === 'web-uid' && p.mountState === 'mounted')), DEADLINE_MS);

    const text = await cli(['pod', 'web', '-n', 'default'], env);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(EXIT.healthy);
    expect(text.stdout).toContain('unmounted volumes=[], unattached volumes=[]');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-mounted'));

    const json = await cli(['pod', 'web', '-o', 'json'], env);
    const report = PodReportSchema.parse(JSON.parse(json.stdout));
    expect(report.volumes).toEqual([expect.objectContaining({ volumeName: 'cache', state: 'ready', blockingStage: null })]);
    const yaml = await cli(['pod', 'web', '-o', 'yaml'], env);
    expect(PodReportSchema.parse(parseYaml(yaml.stdout))).toEqual(expect.objectContaining({ uid: 'web-uid', name: 'web', summaryLine: report.summaryLine }));
  });

  it('setup failing with backoff: the hostPath error verbatim, the next retry, exit code 1; -o markdown is the dashboard summary', async () => {
    const env = await startEnv(false);
    const missing = join(env.base, 'no-such-dir');
    await writeManifest(env.manifestDir, 'pod-logs.json', podManifest('logs', 'logs-uid', { logs: { hostPath: { path: missing, type: 'Directory' } } }));
    await env.agent.waitForSnapshot('the hostPath mount backs off', (s) => s.operations.some((op) => op.podUid === 'logs-uid' && op.state === 'backoff' && op.retryAt !== null), DEADLINE_MS);

    const text = await cli(['pod', 'logs'], env);
    expect(text.code).toBe(EXIT.blocked);
    expect(text.stdout).toContain(`hostPath type check failed: ${missing} is not a directory`);
    expect(text.stdout).toMatch(/next retry: (retry in \d+:\d\d|retry due|running)/);
    expect(text.stdout).toContain('unmounted volumes=[logs], unattached volumes=[]');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-setup-backoff'));

    const md = await cli(['pod', 'logs', '-o', 'markdown', '--dashboard-url=https://volumescope.example.com'], env);
    expect(md.code).toBe(EXIT.blocked);
    expect(md.stdout).toContain('| volume | state | stage | error | failing | next retry |');
    expect(md.stdout).toContain('(https://volumescope.example.com/nodes/');
    await expect(mask(md.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-setup-backoff.md'));
  });

  it('waiting for attach: ControllerPublishVolume fails, the blocking stage is attached, exit code 1', async () => {
    const env = await startEnv(true);
    await env.driver?.fault('ControllerPublishVolume', { code: 'INTERNAL', message: 'attach refused by the test', failNext: 1_000 });
    await addCsiPod(env, 'attach', 'vol-attach');
    await env.agent.waitForSnapshot(
      'the attach backs off',
      (s) => s.operations.some((op) => op.volume === csiUniqueVolumeName('vol-attach') && op.state === 'backoff' && (op.lastError ?? '').includes('attach refused by the test')),
      DEADLINE_MS,
    );
    const text = await cli(['pod', 'attach'], env);
    expect(text.code).toBe(EXIT.blocked);
    expect(text.stdout).toContain('operation: volume_attach backoff');
    expect(text.stdout).toContain('attach refused by the test');
    expect(text.stdout).toContain('unmounted volumes=[data], unattached volumes=[data]');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-waiting-for-attach'));
  });

  it('device mount failing: NodeStageVolume fails, the blocking stage is device mounted, the driver error verbatim', async () => {
    const env = await startEnv(true);
    await env.driver?.fault('NodeStageVolume', { code: 'INTERNAL', message: 'stage refused by the test', failNext: 1_000 });
    await addCsiPod(env, 'stage', 'vol-stage');
    await env.agent.waitForSnapshot('the device mount backs off', (s) => (mountOp(s, csiUniqueVolumeName('vol-stage'))?.lastError ?? '').includes('stage refused by the test'), DEADLINE_MS);
    const text = await cli(['pod', 'stage'], env);
    expect(text.code).toBe(EXIT.blocked);
    expect(text.stdout).toContain('waiting: device mounted');
    expect(text.stdout).toContain('stage refused by the test');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-device-mount-failing'));
  });

  it('uncertain: NodeStageVolume hangs past the CSI deadline, the device stage is uncertain (never shown as mounted or failed)', async () => {
    const env = await startEnv(true);
    await env.driver?.fault('NodeStageVolume', { hang: true });
    await addCsiPod(env, 'hang', 'vol-hang');
    await env.agent.waitForSnapshot('the device mount is uncertain', (s) => s.actual.volumes.some((v) => v.uniqueVolumeName === csiUniqueVolumeName('vol-hang') && v.deviceMountState === 'uncertain') && mountOp(s, csiUniqueVolumeName('vol-hang'))?.state === 'backoff', DEADLINE_MS);
    const text = await cli(['pod', 'hang'], env);
    expect(text.code).toBe(EXIT.blocked);
    expect(text.stdout).toContain('uncertain: device mounted');
    expect(text.stdout).toContain('[? device mounted]');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-uncertain'));
  });

  it('gone pod: removed while NodeUnpublishVolume fails, found by UID, not in the desired world, unmounting', async () => {
    const env = await startEnv(true);
    await addCsiPod(env, 'gone', 'vol-gone');
    await env.agent.waitForSnapshot('the CSI volume is mounted', (s) => s.actual.volumes.some((v) => v.pods.some((p) => p.podUid === 'gone-uid' && p.mountState === 'mounted')), DEADLINE_MS);
    await env.driver?.fault('NodeUnpublishVolume', { code: 'INTERNAL', message: 'unpublish refused by the test', failNext: 1_000 });
    await rm(join(env.manifestDir, 'pod-gone.json'));
    await env.agent.waitForSnapshot('the unmount backs off', (s) => s.operations.some((op) => op.podUid === 'gone-uid' && op.state === 'backoff' && (op.lastError ?? '').includes('unpublish refused by the test')), DEADLINE_MS);

    const byName = await cli(['pod', 'gone'], env);
    expect(byName.code).toBe(EXIT.blocked);
    expect(byName.stdout).toContain('is not known to the agent');
    const text = await cli(['pod', 'gone-uid', '--node', NODE], env);
    expect(text.code).toBe(EXIT.blocked);
    expect(text.stdout).toContain('not in the desired world');
    expect(text.stdout).toContain('not desired: unmounting');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('pod-gone'));
    // Let the teardown unmount it.
    await env.driver?.control('DELETE', '/faults');
  });
});

describe('kubectl volumescope node against a real agent', { timeout: TEST_TIMEOUT_MS }, () => {
  it('counts, pending operations with backoff and the reconstruction result; exit code 1 while degraded; -o json is the contract', async () => {
    const env = await startEnv(false);
    await writeManifest(env.manifestDir, 'pod-web.json', podManifest('web', 'web-uid', { cache: { emptyDir: {} } }));
    await writeManifest(env.manifestDir, 'pod-logs.json', podManifest('logs', 'logs-uid', { logs: { hostPath: { path: join(env.base, 'no-such-dir'), type: 'Directory' } } }));
    await env.agent.waitForSnapshot('logs backs off, web is mounted', (s) => s.operations.some((op) => op.podUid === 'logs-uid' && op.state === 'backoff') && s.actual.volumes.some((v) => v.pods.some((p) => p.podUid === 'web-uid')), DEADLINE_MS);

    const text = await cli(['node', NODE], env);
    expect(text.code).toBe(EXIT.blocked);
    expect(text.stdout).toContain(`Node ${NODE}: degraded`);
    expect(text.stdout).toContain('pods 2 · desired volumes 2 · mounted 1');
    expect(text.stdout).toContain('Pending operations (1):');
    expect(text.stdout).toContain('Reconstruction: done');
    await expect(mask(text.stdout, env)).toMatchFileSnapshot(snapshotFile('node-degraded'));

    const report = NodeReportSchema.parse(JSON.parse((await cli(['node', NODE, '-o', 'json'], env)).stdout));
    expect(report.summary.nodeName).toBe(NODE);
    expect(report.operations).toEqual([expect.objectContaining({ podUid: 'logs-uid', state: 'backoff' })]);

    // The directory appears: the next retry mounts it and the node is healthy again.
    await mkdir(join(env.base, 'no-such-dir'));
    await env.agent.waitForSnapshot('logs is mounted', (s) => s.operations.length === 0 && s.actual.volumes.some((v) => v.pods.some((p) => p.podUid === 'logs-uid' && p.mountState === 'mounted')), DEADLINE_MS);
    expect((await cli(['node', NODE], env)).code).toBe(EXIT.healthy);
  });

  it('--watch follows the event stream: a frame per change, ends on stop with the last state\'s exit code', async () => {
    const env = await startEnv(false);
    const stop = new AbortController();
    let stdout = '';
    const frames: string[] = [];
    const running = runCli(['pod', 'late', '--watch', `--agent-url=${env.agent.baseUrl}`, `--token-file=${env.tokenFile}`], {
      stdout: {
        write: (t: string) => {
          stdout += t;
          frames.push(t);
          if (t.includes('unmounted volumes=[], unattached volumes=[]')) stop.abort();
        },
      },
      stderr: { write: () => undefined },
      env: {},
      now: () => Date.now(),
      stop: stop.signal,
    });
    await expect.poll(() => frames.length, { timeout: DEADLINE_MS }).toBeGreaterThan(0);
    expect(frames[0]).toContain('is not known to the agent');
    await writeManifest(env.manifestDir, 'pod-late.json', podManifest('late', 'late-uid', { cache: { emptyDir: {} } }));
    expect(await running).toBe(EXIT.healthy);
    expect(stdout).toContain('Pod default/late (uid late-uid)');
  });

  it('--watch on a TTY: colour, the screen redrawn, and the next retry counting down every second on the injected clock; NO_COLOR drops the colour', async () => {
    const env = await startEnv(false);
    await writeManifest(env.manifestDir, 'pod-logs.json', podManifest('logs', 'logs-uid', { logs: { hostPath: { path: join(env.base, 'missing'), type: 'Directory' } } }));
    const op = await env.agent.waitForSnapshot('the mount backs off', (s) => s.operations.find((o) => o.podUid === 'logs-uid' && o.state === 'backoff' && o.retryAt !== null), DEADLINE_MS);
    for (const noColor of [false, true]) {
      const stop = new AbortController();
      const frames: string[] = [];
      const ticks: (() => void)[] = [];
      // Far enough before the retry that the countdown shows minutes.
      let now = (op.retryAt ?? 0) - 125_000;
      const running = runCli(['pod', 'logs', '--watch', `--agent-url=${env.agent.baseUrl}`, `--token-file=${env.tokenFile}`], {
        stdout: { isTTY: true, write: (t: string) => frames.push(t) },
        stderr: { write: () => undefined },
        env: noColor ? { NO_COLOR: '1' } : {},
        now: () => now,
        stop: stop.signal,
        every: (ms, fn) => {
          expect(ms).toBe(1_000);
          ticks.push(fn);
          return () => undefined;
        },
      });
      // A frame in backoff (not during an attempt, when the countdown reads `running`).
      await expect.poll(() => /next retry: retry in \d+:\d\d/.test(frames.at(-1) ?? ''), { timeout: DEADLINE_MS }).toBe(true);
      const first = frames.at(-1) ?? '';
      expect(first.startsWith('\u001b[H\u001b[2J')).toBe(true);
      expect(first.includes('\u001b[31m')).toBe(!noColor);
      const countdown = (frame: string): number => {
        const m = /next retry: retry in (\d+):(\d\d)/.exec(frame);
        return m === null ? Number.NaN : Number(m[1]) * 60 + Number(m[2]);
      };
      const before = countdown(first);
      // At least 2:05 (a retry since `op` was read only moves retryAt later).
      expect(before).toBeGreaterThanOrEqual(125);
      now += 1_000;
      for (const tick of ticks) tick();
      const second = frames.at(-1) ?? '';
      expect(second).not.toBe(first);
      // The tick redraws the same state one second later: the countdown is one second shorter.
      expect(countdown(second)).toBe(before - 1);
      stop.abort();
      expect(await running).toBe(EXIT.blocked);
    }
  });
});

describe('kubectl volumescope node against a real observe-mode agent', { timeout: TEST_TIMEOUT_MS }, () => {
  it('shows the kubelet\'s outstanding work and the orphaned pod directories', async () => {
    const base = await makeTempDir('volumescope-kubectl-observe-');
    const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
    const observer = await startObserver({ name: 'observed-node', repoRoot, baseDir: base, logDir: join(base, 'logs'), mountsAllowed: realMountsAllowed });
    cleanups.push(async () => {
      await observer.stop();
      await rm(base, { recursive: true, force: true });
    });
    const args = ['node', 'observed-node', `--agent-url=${observer.info.url}`, `--token-file=${observer.info.tokenFile}`];
    let out = await cli(args, null);
    await waitFor(
      async () => {
        out = await cli(args, null);
        // The agent's plan and the kubelet's backoff (from its events) come after the first pass.
        return /Orphaned pod directories: [1-9]/.test(out.stdout) && /Outstanding kubelet work \(observe mode\): [1-9]/.test(out.stdout) && out.stdout.includes('Pending operations (1)');
      },
      { what: 'the plugin lists the outstanding work, the kubelet backoff and the orphaned pod directories', timeoutMs: DEADLINE_MS },
    );
    expect(out.stdout).toContain('mode observe');
    expect(out.stdout).toMatch(/Outstanding kubelet work \(observe mode\): [1-9]/);
    expect(out.stdout).toMatch(/Orphaned pod directories: [1-9]/);
    const report = NodeReportSchema.parse(JSON.parse((await cli([...args, '-o', 'json'], null)).stdout));
    expect(report.observe?.orphans.length).toBeGreaterThan(0);
    expect(report.summary.observe).not.toBeNull();
    await expect(mask(out.stdout, { base })).toMatchFileSnapshot(snapshotFile('node-observe'));
  });
});

describe('exit codes, errors and --help of the executable', { timeout: TEST_TIMEOUT_MS }, () => {
  it('--help on every command (exit 0), a usage error exits 2', async () => {
    for (const args of [['--help'], ['pod', '--help'], ['node', '-h'], ['help', 'pod']]) {
      const r = await cli(args, null);
      expect(r.code, args.join(' ')).toBe(EXIT.healthy);
      expect(r.stdout).toContain('kubectl volumescope');
    }
    expect((await cli(['pod', '--help'], null)).stdout).toContain('--namespace');
    for (const args of [[], ['pods', 'x'], ['pod'], ['pod', 'a', 'b'], ['pod', 'a', '-o', 'wide'], ['node', 'n', '-n', 'x'], ['pod', 'a', '--transport=ssh'], ['pod', 'a', '--bogus']]) {
      const r = await cli(args, null);
      expect(r.code, args.join(' ')).toBe(EXIT.usage);
      expect(r.stderr).toContain('Run "kubectl volumescope --help" for usage.');
    }
  });

  it('a wrong token is 401, an unreachable agent is named: exit code 3', async () => {
    const env = await startEnv(false);
    await writeFile(env.tokenFile, 'wrong-token');
    const refused = await cli(['node', NODE], env);
    expect(refused.code).toBe(EXIT.unavailable);
    expect(refused.stderr).toContain('the agent did not accept your credentials');
    const gone = await cli(['node', NODE, '--agent-url=http://127.0.0.1:9'], null);
    expect(gone.code).toBe(EXIT.unavailable);
    expect(gone.stderr).toContain('cannot reach the agent');
  });

  it('the real executable (bin.mjs, as kubectl runs it): --help exits 0, a usage error 2; no colour without a TTY', async () => {
    const help = await execFileAsync(process.execPath, [BIN, 'node', '--help']);
    expect(help.stdout).toContain('kubectl volumescope node NAME');
    expect(help.stdout).not.toContain('\u001b[');
    const usage = await execFileAsync(process.execPath, [BIN, 'pod']).then(
      () => ({ code: 0, stderr: '' }),
      (err: unknown) => err as { code: number; stderr: string },
    );
    expect(usage.code).toBe(EXIT.usage);
    expect(usage.stderr).toContain('pod needs a name');
  });
});
