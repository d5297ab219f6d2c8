// `npm start`: builds the dashboard when its build is missing, then serves it and prints the URL.
// Runs on the pinned Node (npm puts node_modules/.bin first on PATH).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nextBin = join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
const port = process.env.PORT ?? '3000';
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };

if (!existsSync(join(root, '.next', 'BUILD_ID'))) {
  console.log('volumescope: building the dashboard…');
  const build = spawnSync(process.execPath, [nextBin, 'build'], { cwd: root, stdio: 'inherit', env });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const server = spawn(process.execPath, [nextBin, 'start', '-H', '127.0.0.1', '-p', port], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env,
});
console.log(`volumescope: dashboard on http://localhost:${port}  (Ctrl-C stops it)`);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => server.kill('SIGTERM'));
}
server.on('exit', (code) => process.exit(code ?? 0));
