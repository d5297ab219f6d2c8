// `npm run test:e2e`: the dashboard's end-to-end tests (e2e/, Playwright with Debian's Chromium).
//
// Runs Playwright (playwright.config.ts): as root inside a private mount namespace
// (VOLUMESCOPE_MOUNT_NS=1), so the agents and the CSI test driver make real mounts that cannot leak
// into the host; otherwise in unprivileged mode. The global setup (e2e/global-setup.ts) builds the dashboard when its build is
// missing or stale, starts the driver, two agents and the dashboard in a temporary directory, and
// checks on teardown that nothing stayed mounted.
// Browser: Debian's Chromium at /usr/bin/chromium, or the binary VOLUMESCOPE_CHROMIUM names;
// VOLUMESCOPE_CHROMIUM=playwright uses Playwright's own (after `npx playwright install chromium`).
// Extra arguments go to `playwright test` (e.g. `npm run test:e2e -- e2e/overview.spec.ts`).
// @ts-check
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mountNamespaceCommand } from './mount-namespace.mjs';
import { ensurePinnedNode } from './pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
ensurePinnedNode(import.meta.url);

const chromium = process.env.VOLUMESCOPE_CHROMIUM ?? '/usr/bin/chromium';
if (chromium !== 'playwright' && !existsSync(chromium)) {
  console.error(
    `volumescope: no Chromium at ${chromium}. Install Debian's (apt-get install -y chromium) or point ` +
      'VOLUMESCOPE_CHROMIUM at a Chromium binary (README, "End-to-end tests", shows how to use Playwright’s own).',
  );
  process.exit(1);
}

const cli = join(root, 'node_modules', '@playwright', 'test', 'cli.js');
const env = { ...process.env };
delete env.NODE_OPTIONS;
const command = mountNamespaceCommand([cli, 'test', ...process.argv.slice(2)], env);
console.log(`e2e: ${command.note}`);
const started = performance.now();
const result = spawnSync(command.file, command.args, { cwd: root, stdio: 'inherit', env: command.env });
console.log(`e2e: finished in ${Math.round((performance.now() - started) / 1000)} s (exit ${result.status ?? result.signal ?? 'unknown'})`);
process.exit(result.status ?? 1);
