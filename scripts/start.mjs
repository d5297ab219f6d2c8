// `npm start`: the embedded demo. npm has already run scripts/ensure-deps.mjs (prestart: `npm ci`
// when node_modules is missing or stale, on whatever Node runs npm); this script runs on the pinned
// Node from node_modules/.bin (re-executing itself there if started with another one). It builds
// the dashboard when its build is missing or stale (scripts/dashboard-build.mjs) and runs the demo,
// scripts/demo/main.ts: as root inside a private mount namespace (scripts/mount-namespace.mjs),
// otherwise directly in unprivileged mode. The demo prints
// `VolumeScope dashboard: http://localhost:3000` once everything is up.
//
// The demo runs in its own process group, so a Ctrl-C in the terminal reaches this process (and
// npm) but not the demo directly: this process passes exactly one SIGTERM on, then waits for the
// demo, which stops its children in the order that leaves no mounts, and exits with its code.
// @ts-check
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePinnedNode } from './pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
ensurePinnedNode(import.meta.url);

// Imported only now: they need the pinned Node's features.
const { ensureDashboardBuild } = await import('./dashboard-build.mjs');
const { mountNamespaceCommand, runInOwnProcessGroup } = await import('./mount-namespace.mjs');

try {
  ensureDashboardBuild({ frameAncestors: process.env.VOLUMESCOPE_FRAME_ANCESTORS });
} catch (err) {
  // A failed build, or a malformed VOLUMESCOPE_FRAME_ANCESTORS (the message names the entry).
  console.error(`volumescope: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}

const command = mountNamespaceCommand(['--import', 'tsx', join(root, 'scripts', 'demo', 'main.ts')], process.env);
console.log(`volumescope: starting the demo (${command.note})…`);
runInOwnProcessGroup(command, { cwd: root });
