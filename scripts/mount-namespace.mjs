// Where the demo and the e2e tests run: as root, inside a private mount namespace
// (`unshare --mount --propagation private`), with VOLUMESCOPE_MOUNT_NS=1 telling the agents and the
// CSI test driver that real mounts are allowed there; they can never leak into the host's
// namespace, and they vanish with the namespace's last process. Without root (or where unshare is
// missing or not permitted) the same command runs directly and everything uses the unprivileged
// stand-ins (directories and symlinks) instead of mounts.
// @ts-check
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * How to run `process.execPath ...nodeArgs`.
 * @param {readonly string[]} nodeArgs
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ file: string, args: string[], env: NodeJS.ProcessEnv, mode: 'namespace' | 'unprivileged', note: string }}
 */
export function mountNamespaceCommand(nodeArgs, env) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (env.VOLUMESCOPE_MOUNT_NS === '1') {
    // Already inside the namespace (e.g. the whole `npm test` runs in one).
    return { file: process.execPath, args: [...nodeArgs], env, mode: 'namespace', note: 'already in a private mount namespace: real mounts' };
  }
  /** @type {NodeJS.ProcessEnv} */
  const plain = { ...env };
  delete plain.VOLUMESCOPE_MOUNT_NS;
  if (!isRoot) {
    return { file: process.execPath, args: [...nodeArgs], env: plain, mode: 'unprivileged', note: 'not root: directories and symlinks stand in for mounts' };
  }
  const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
  const probe = unshare === undefined ? null : spawnSync(unshare, ['--mount', '--propagation', 'private', '--', 'true'], { stdio: 'ignore' });
  if (unshare === undefined || probe === null || probe.status !== 0) {
    return {
      file: process.execPath,
      args: [...nodeArgs],
      env: plain,
      mode: 'unprivileged',
      note: 'root, but no private mount namespace is available (unshare missing or not permitted): directories and symlinks stand in for mounts',
    };
  }
  return {
    file: unshare,
    args: ['--mount', '--propagation', 'private', '--', process.execPath, ...nodeArgs],
    env: { ...env, VOLUMESCOPE_MOUNT_NS: '1' },
    mode: 'namespace',
    note: 'root: real mounts inside a private mount namespace',
  };
}

/**
 * Runs `command` (from {@link mountNamespaceCommand}) in its own process group (unless
 * `detached: false`, e.g. for `--help`) with this process's terminal, so a Ctrl-C in the terminal
 * reaches this process but not the child directly: the first SIGINT/SIGTERM/SIGHUP here is passed
 * on as exactly one SIGTERM, and this process exits with the child's code once it has stopped
 * (128 + 15 when it ended on a signal). Used by the entry scripts of `npm start`, `npm run cluster`
 * and `npm run demo:cluster`, whose children stop their own children in an order that leaves no mounts.
 * @param {{ file: string, args: string[], env: NodeJS.ProcessEnv }} command
 * @param {{ cwd: string, detached?: boolean }} options
 */
export function runInOwnProcessGroup(command, options) {
  const child = spawn(command.file, command.args, { cwd: options.cwd, stdio: 'inherit', env: command.env, detached: options.detached ?? true });
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      child.kill('SIGTERM');
    });
  }
  child.on('exit', (code, signal) => {
    process.exit(code ?? (signal === null ? 1 : 128 + 15));
  });
}
