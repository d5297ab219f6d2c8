// `npm run cluster`: runs scripts/cluster/main.ts on the pinned Node (re-executing itself there if
// started with another one), as root inside a private mount namespace (scripts/mount-namespace.mjs)
// so the agent's and the CSI driver's mounts can never leak into the host. `--help` and the flags
// are passed through to main.ts.
//
// main.ts runs in its own process group, so a Ctrl-C in the terminal reaches this process (and npm)
// but not the cluster directly: this process passes exactly one SIGTERM on, then waits for main.ts,
// which stops the components in the order that leaves no mounts, and exits with its code.
// @ts-check
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePinnedNode } from '../pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
ensurePinnedNode(import.meta.url);

const { mountNamespaceCommand, runInOwnProcessGroup } = await import('../mount-namespace.mjs');
const command = mountNamespaceCommand(['--import', 'tsx', join(root, 'scripts', 'cluster', 'main.ts'), ...process.argv.slice(2)], process.env);
const help = process.argv.includes('--help');
if (!help) console.log(`cluster: starting (${command.note})…`);
runInOwnProcessGroup(command, { cwd: root, detached: !help });
