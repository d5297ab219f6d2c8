/**
 * The embedded demo of `npm start` (started by scripts/start.mjs, as root inside a private mount
 * namespace): the CSI test driver, two agents (`demo-node-a`, `demo-node-b`) with their state
 * under `.volumescope/demo/`, the demo workload (workload.ts) and the dashboard on
 * http://localhost:3000 (PORT overrides).
 *
 * Ports: dashboard PORT (default 3000), agents 127.0.0.1:7071 and :7072, driver control
 * 127.0.0.1:7079; a taken port fails the start with a message naming it.
 *
 * SIGINT/SIGTERM (Ctrl-C): the workload stops, its pods are removed and the agents unmount every
 * volume (bounded wait), then agents, driver and dashboard stop and the mount table is checked;
 * leftovers are unmounted through lib/mount-utils. Further signals during that are ignored, so an
 * impatient second Ctrl-C cannot leave mounts behind. Exit 0 when nothing was left mounted, 1
 * otherwise or when the demo could not start or a process crashed.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dashboardPort } from './dashboard.ts';
import { removePodManifests } from './manifests.ts';
import { startObserver, type Observer } from './observer.ts';
import { isStartError, pause } from './process.ts';
import { Stack, describeTeardown, isRoot, mountsAllowedHere, nodeDirs, teardownClean } from './stack.ts';
import { DemoWorkload } from './workload.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEMO_DIR = join(REPO_ROOT, '.volumescope', 'demo');
const PID_FILE = join(DEMO_DIR, 'demo.pid');
const NODE_A = 'demo-node-a';
const NODE_B = 'demo-node-b';
/** An observe-mode agent beside a simulated kubelet (scripts/demo/observer.ts). */
const OBSERVER = 'demo-observer';
const OBSERVER_PORT = 7073;

function say(message: string): void {
  process.stdout.write(`volumescope: ${message}\n`);
}

/** Refuses a second demo on the same directory (its ports would clash anyway, but this says why). */
async function claimPidFile(): Promise<void> {
  await mkdir(DEMO_DIR, { recursive: true });
  const previous = Number((await readFile(PID_FILE, 'utf8').catch(() => '')).trim());
  if (Number.isInteger(previous) && previous > 0 && previous !== process.pid) {
    const cmdline = await readFile(`/proc/${previous}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('scripts/demo/main.ts')) throw new Error(`a demo is already running (pid ${previous}); stop it first (Ctrl-C in its terminal)`);
  }
  await writeFile(PID_FILE, `${process.pid}\n`);
}

async function main(): Promise<number> {
  // Signals are caught from the first moment; one during the start tears down right after it.
  let stopRequested: (signal: string) => void = () => undefined;
  const stopSignal = new Promise<string>((resolve) => {
    stopRequested = resolve;
  });
  let signals = 0;
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(s, () => {
      signals++;
      if (signals > 1) say('still cleaning up so that nothing stays mounted; please wait…');
      stopRequested(s);
    });
  }

  const port = dashboardPort();
  await claimPidFile();
  const mountsAllowed = mountsAllowedHere();
  say(
    mountsAllowed
      ? 'real mounts inside a private mount namespace (root): tmpfs, bind mounts, loop devices with ext4'
      : `unprivileged mode (${isRoot() ? 'root without a private mount namespace' : 'not root'}): directories and symlinks stand in for mounts`,
  );

  // Pods left by a demo that was killed: gone before the agents start, so they reconstruct
  // and clean up those volumes instead of mounting pods no timer will ever delete.
  for (const node of [NODE_A, NODE_B]) await removePodManifests(nodeDirs(DEMO_DIR, node).manifestDir);

  let stack: Stack;
  let observer: Observer;
  try {
    say(`starting ${OBSERVER}: an observe-mode agent beside a simulated kubelet…`);
    observer = await startObserver({ name: OBSERVER, repoRoot: REPO_ROOT, baseDir: DEMO_DIR, logDir: join(DEMO_DIR, 'logs'), mountsAllowed, port: OBSERVER_PORT });
  } catch (err) {
    process.stderr.write(`volumescope: the demo could not start ${OBSERVER}: ${errorMessage(err)}\n`);
    return 1;
  }
  try {
    stack = await Stack.start({
      extraAgents: [observer.info],
      repoRoot: REPO_ROOT,
      baseDir: DEMO_DIR,
      logDir: join(DEMO_DIR, 'logs'),
      nodes: [
        { name: NODE_A, port: 7071 },
        { name: NODE_B, port: 7072 },
      ],
      driverControlPort: 7079,
      driverNodeId: 'demo-host',
      dashboardHost: '127.0.0.1',
      dashboardPort: port,
      mountsAllowed,
      progress: say,
    });
  } catch (err) {
    await observer.stop();
    if (!isStartError(err)) throw err;
    process.stderr.write(`volumescope: the demo could not start: ${err.message}\n`);
    return 1;
  }

  const workload = new DemoWorkload({
    stack,
    nodeA: NODE_A,
    nodeB: NODE_B,
    hostDataDir: join(DEMO_DIR, 'host-data'),
    say: (m) => {
      say(`[${workload.elapsed()}] ${m}`);
    },
  });
  let exitCode = 0;
  try {
    await workload.start();
    process.stdout.write(
      [
        '',
        `VolumeScope dashboard: http://localhost:${port}`,
        '',
        `  nodes ${NODE_A} (127.0.0.1:7071) and ${NODE_B} (127.0.0.1:7072); CSI test driver control on 127.0.0.1:7079`,
        `  ${OBSERVER} (127.0.0.1:${String(OBSERVER_PORT)}): observe mode beside a simulated kubelet (a Kubernetes-protocol test server and a prepared root dir)`,
        '  pods come and go; a hostPath directory appears after 1 min; demo-node-b restarts after 2 min',
        `  state and logs under ${join('.volumescope', 'demo')}/  ·  Ctrl-C stops everything`,
        '',
        '',
      ].join('\n'),
    );

    // Run until a signal, or until a process dies on its own.
    const crashed = (async () => {
      for (;;) {
        const dead = stack.crashed();
        if (dead.length > 0) return dead;
        await Promise.race([pause(1000), stopSignal]);
        if (signals > 0) return [];
      }
    })();
    const dead = await Promise.race([crashed, stopSignal.then(() => [])]);
    for (const p of dead) {
      exitCode = 1;
      process.stderr.write(`volumescope: ${p.name} exited unexpectedly; log ${p.options.logFile}:\n${await p.logTail()}\n`);
    }
    say('stopping the demo…');
  } finally {
    await workload.stop();
    await observer.stop();
    const report = await stack.teardown({ drainMs: 45_000 });
    if (teardownClean(report)) say(`stopped; ${describeTeardown(report)} under .volumescope/demo`);
    else {
      exitCode = 1;
      process.stderr.write(`volumescope: stopped, but:\n${describeTeardown(report)}\n`);
    }
    await rm(PID_FILE, { force: true });
  }
  return exitCode;
}

main().then(
  (code) => {
    process.exit(code);
  },
  async (err: unknown) => {
    process.stderr.write(`volumescope: ${errorMessage(err)}\n`);
    await rm(PID_FILE, { force: true }).catch(() => undefined);
    process.exit(1);
  },
);
