// Runs the unit and integration tests. As root, the run happens inside a private mount namespace
// (`unshare --mount --propagation private`), so tests make real tmpfs, bind and loop mounts that
// can never leak into the host; VOLUMESCOPE_MOUNT_NS=1 tells tests that real mounts are allowed.
// Elsewhere (a laptop, non-root) tests run the unprivileged mounter instead.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
// A JSON report beside the usual output, so the run can end with one plain summary line.
const reportDir = mkdtempSync(join(tmpdir(), 'volumescope-vitest-'));
const reportFile = join(reportDir, 'report.json');
const args = [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`, ...process.argv.slice(2)];
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));

let result;
if (isRoot && unshare !== undefined && process.env.VOLUMESCOPE_MOUNT_NS !== '1') {
  result = spawnSync(unshare, ['--mount', '--propagation', 'private', '--', process.execPath, ...args], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, VOLUMESCOPE_MOUNT_NS: '1' },
  });
} else {
  result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
}

if (existsSync(reportFile)) {
  const report = JSON.parse(readFileSync(reportFile, 'utf8'));
  const failed = report.numFailedTests + (report.numRuntimeErrorTests ?? 0);
  console.log(`unit: ${report.numPassedTests} passed, ${failed} failed`);
}
rmSync(reportDir, { recursive: true, force: true });
process.exit(result.status ?? 1);
