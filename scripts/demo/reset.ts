/**
 * `npm run demo:reset`: wipes `.volumescope/demo/` (the demo's agents, driver disks, manifests
 * and logs), so the next `npm start` begins from nothing.
 *
 * Refuses, and deletes nothing, while
 * - a demo is running (its pid file names a live demo process): its mounts live in its private
 *   mount namespace, invisible from here, so the only safe answer is "stop it first";
 * - anything is mounted at or below the directory (kernel mount table, or an agent's stand-in
 *   table of the unprivileged mounter);
 * - a loop device is still backed by one of the driver's disk images.
 * Only then is the directory removed (fs.rm does not follow symlinks, and nothing below it is a
 * mount point, so the removal cannot reach outside it).
 */
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLeftoverMounts, loopDevicesBackedBelow } from './mount-check.ts';
import { nodeDirs } from './stack.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEMO_DIR = join(REPO_ROOT, '.volumescope', 'demo');
const shown = relative(process.cwd(), DEMO_DIR) || DEMO_DIR;

function refuse(message: string): never {
  process.stderr.write(`volumescope: not resetting ${shown}: ${message}\n`);
  process.exit(1);
}

async function runningDemo(): Promise<number | null> {
  const pid = Number((await readFile(join(DEMO_DIR, 'demo.pid'), 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes('scripts/demo/main.ts') ? pid : null;
}

async function main(): Promise<void> {
  try {
    await stat(DEMO_DIR);
  } catch {
    process.stdout.write(`volumescope: ${shown} does not exist; nothing to reset\n`);
    return;
  }
  const pid = await runningDemo();
  if (pid !== null) refuse(`the demo is running (pid ${pid}); stop it first (Ctrl-C in its terminal), then run npm run demo:reset again`);

  const entries = await readdir(DEMO_DIR, { withFileTypes: true });
  const agentRoots = entries.filter((e) => e.isDirectory()).map((e) => nodeDirs(DEMO_DIR, e.name).rootDir);
  const mounts = await findLeftoverMounts(DEMO_DIR, agentRoots);
  if (mounts.length > 0) {
    refuse(
      `something is still mounted below it:\n${mounts.map((m) => `  ${m.mountPoint} (${m.kind === 'kernel' ? 'mount' : 'stand-in mount of the unprivileged mounter'})`).join('\n')}\n` +
        'Stop the demo first (Ctrl-C in its terminal); it unmounts everything on the way out.',
    );
  }
  const loops = await loopDevicesBackedBelow(DEMO_DIR);
  if (loops.length > 0) refuse(`loop devices still use the demo's disk images: ${loops.join(', ')}; stop the demo first, or detach them with losetup -d`);

  await rm(DEMO_DIR, { recursive: true, force: true });
  process.stdout.write(`volumescope: removed ${shown}; the next npm start begins from scratch\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`volumescope: demo:reset failed: ${errorMessage(err)}\n`);
  process.exit(1);
});
