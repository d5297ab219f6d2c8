// Hands a script over to the Node pinned in node_modules (the `node` package, Node 24) when it was
// started by an older one, e.g. `node scripts/start.mjs` with the machine's Node 20. npm scripts
// already run on the pinned Node (npm puts node_modules/.bin first on PATH); this covers direct
// runs. Uses nothing newer than Node 18 itself.
// @ts-check
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pinnedNode = join(root, 'node_modules', '.bin', 'node');
const MIN_NODE_MAJOR = 24;

/**
 * Returns when this process runs on Node >= 24; otherwise re-runs `script` (a file URL) with the
 * same arguments on the pinned Node and exits with its status (or exits 1 when it is missing).
 * @param {string} scriptUrl `import.meta.url` of the calling script
 */
export function ensurePinnedNode(scriptUrl) {
  if (Number(process.versions.node.split('.')[0]) >= MIN_NODE_MAJOR) return;
  if (!existsSync(pinnedNode)) {
    console.error(`volumescope: Node ${process.versions.node} is too old and ${pinnedNode} is missing; run npm ci (npm start and npm test run it for you)`);
    process.exit(1);
  }
  const again = spawnSync(pinnedNode, [fileURLToPath(scriptUrl), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(again.status ?? 1);
}
