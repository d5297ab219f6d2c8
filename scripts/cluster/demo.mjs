// `npm run demo:cluster`: runs scripts/cluster/demo.ts on the pinned Node (re-executing itself there
// if started with another one), after building the dashboard when its build is missing or stale
// (scripts/dashboard-build.mjs, as `npm start` does), as root inside a private mount namespace
// (scripts/mount-namespace.mjs) so the agent's, the kubelet's and the CSI driver's mounts can never
// leak into the host. `--help` and the flags are passed through to demo.ts.
//
// demo.ts runs in its own process group, so a Ctrl-C in the terminal reaches this process (and npm)
// but not the demo directly: this process passes exactly one SIGTERM on, then waits for demo.ts,
// which stops the dashboard, the agents and the cluster in that order, and exits with its code.
// @ts-check
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePinnedNode } from '../pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
ensurePinnedNode(import.meta.url);

const help = process.argv.includes('--help');
if (!help) {
  // Imported only now: it needs the pinned Node's features.
  const { ensureDashboardBuild } = await import('../dashboard-build.mjs');
  try {
    ensureDashboardBuild({ frameAncestors: process.env.VOLUMESCOPE_FRAME_ANCESTORS });
  } catch (err) {
    // A failed build, or a malformed VOLUMESCOPE_FRAME_ANCESTORS (the message names the entry).
    console.error(`demo:cluster: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}

const { mountNamespaceCommand, runInOwnProcessGroup } = await import('../mount-namespace.mjs');
const command = mountNamespaceCommand(['--import', 'tsx', join(root, 'scripts', 'cluster', 'demo.ts'), ...process.argv.slice(2)], process.env);
if (!help) console.log(`demo:cluster: starting (${command.note})…`);
runInOwnProcessGroup(command, { cwd: root, detached: !help });
