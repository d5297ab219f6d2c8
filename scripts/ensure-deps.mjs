// Runs before `npm start` and `npm test` on whatever Node runs npm, so it uses no dependencies.
// Installs node_modules with `npm ci` when they are missing or older than package-lock.json.
// After this step npm runs the real script with node_modules/.bin first on PATH, which holds
// the Node version pinned through the `node` package.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lockFile = join(root, 'package-lock.json');
const installedMarker = join(root, 'node_modules', '.package-lock.json');
const pinnedNode = join(root, 'node_modules', '.bin', 'node');

function needsInstall() {
  if (!existsSync(installedMarker) || !existsSync(pinnedNode)) return 'node_modules is missing';
  if (statSync(installedMarker).mtimeMs < statSync(lockFile).mtimeMs) {
    return 'node_modules is older than package-lock.json';
  }
  return null;
}

const reason = needsInstall();
if (reason !== null) {
  console.log(`volumescope: ${reason}; running npm ci (about 30 s on a fresh machine)…`);
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`volumescope: npm ci failed with exit code ${result.status ?? 'null'}`);
    process.exit(result.status ?? 1);
  }
}
