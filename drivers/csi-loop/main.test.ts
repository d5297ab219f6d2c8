// The CLI as a child process: --help, exit 2 on bad flags, serving, and SIGTERM → exit 0.
import { spawn, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { CsiTestClient } from './csi-test-client.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function runCli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 15_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

let dir: string | undefined;

afterEach(async () => {
  if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('csi-loop CLI', () => {
  it('lists every flag with --help and exits 0', () => {
    const result = runCli(['--help']);
    expect(result.status).toBe(0);
    for (const flag of ['--endpoint', '--state-dir', '--control', '--driver-name', '--node-id', '--mode', '--registration-dir']) {
      expect(result.stdout).toContain(flag);
    }
  });

  it('exits 2 and names the flag when a flag is wrong', () => {
    const result = runCli(['--endpoint', 'unix:///tmp/never.sock', '--state-dir', '/tmp/never', '--colour', 'blue']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--colour: unknown flag');
  });

  it('serves CSI on the socket and exits 0 on SIGTERM, removing the socket', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'csi-loop-cli-'));
    const socket = path.join(dir, 'csi.sock');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, '--endpoint', `unix://${socket}`, '--state-dir', path.join(dir, 'state'), '--mode', 'unprivileged', '--node-id', 'cli-node'],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { resolve(code); }));
    try {
      const deadline = performance.now() + 15_000;
      while (!stderr.includes('csi-loop driver started')) {
        if (performance.now() > deadline) throw new Error(`driver did not start: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const client = new CsiTestClient(`unix://${socket}`);
      try {
        expect(await client.node('NodeGetInfo')).toMatchObject({ node_id: 'cli-node' });
      } finally {
        client.close();
      }
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    await expect(fs.lstat(socket)).rejects.toMatchObject({ code: 'ENOENT' });
    const lines = stderr.split('\n').filter((l) => l !== '');
    for (const line of lines) {
      expect(() => JSON.parse(line) as unknown).not.toThrow();
    }
    expect(lines.some((l) => l.includes('"method":"NodeGetInfo"'))).toBe(true);
  });
});
