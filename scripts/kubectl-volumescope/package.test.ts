/**
 * The krew package (package.ts): one bundled file in a tar.gz, and a krew manifest whose sha256 is
 * the archive's. The unpacked executable is run as kubectl would run it (its `#!/usr/bin/env node`
 * line, whatever `node` is first on PATH) against a REAL agent process.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cleanUpTempDir, makeTempDir, realMountsAllowed } from '../../lib/mount-utils/testing/mount-test-env.ts';
import { AgentProcess, standInMounter } from '../../agent/node/testing/agent-process.ts';
import { podManifest } from '../../agent/node/testing/pod-manifest.ts';
import { ARCHIVE_NAME, BIN_NAME, packagePlugin } from './package.ts';

const execFileAsync = promisify(execFile);
let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

interface KrewManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: { version: string; platforms: { uri: string; sha256: string; bin: string; files: { from: string; to: string }[] }[] };
}

describe('the krew package of kubectl volumescope', () => {
  it('bundles one executable, packs it, writes a manifest with its sha256; the unpacked plugin answers against a real agent', { timeout: 120_000 }, async () => {
    const base = await makeTempDir('volumescope-krew-');
    const rootDir = join(base, 'root');
    cleanups.push(async () => {
      await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
    });
    const out = join(base, 'out');
    await mkdir(out);

    const result = await packagePlugin(out, 'https://downloads.example.com/volumescope/v0.1.0');

    const manifest = parse(await readFile(result.manifest, 'utf8')) as KrewManifest;
    expect(manifest).toMatchObject({ apiVersion: 'krew.googlecontainertools.github.com/v1alpha2', kind: 'Plugin', metadata: { name: 'volumescope' } });
    expect(manifest.spec.version).toBe(`v${result.version}`);
    const [platform] = manifest.spec.platforms;
    expect(platform?.uri).toBe(`https://downloads.example.com/volumescope/v0.1.0/${ARCHIVE_NAME}`);
    expect(platform?.sha256).toBe(createHash('sha256').update(await readFile(result.archive)).digest('hex'));
    expect(platform?.bin).toBe(BIN_NAME);
    expect(platform?.files).toEqual([{ from: BIN_NAME, to: '.' }]);
    expect(await readFile(result.manifest, 'utf8')).not.toContain('${');

    const unpacked = join(base, 'unpacked');
    await mkdir(unpacked);
    await execFileAsync('tar', ['-xzf', result.archive, '-C', unpacked]);
    const bin = join(unpacked, BIN_NAME);
    const help = await execFileAsync(bin, ['pod', '--help']);
    expect(help.stdout).toContain('kubectl volumescope pod NAME');

    const manifestDir = join(base, 'manifests');
    await mkdir(manifestDir);
    const agent = await AgentProcess.start({ rootDir, manifestDir, nodeName: 'node-krew' });
    cleanups.push(async () => {
      await agent.stop('SIGKILL');
    });
    await writeFile(join(manifestDir, '.pod.tmp'), podManifest('web', 'web-uid', { cache: { emptyDir: {} } }));
    await rename(join(manifestDir, '.pod.tmp'), join(manifestDir, 'pod-web.json'));
    await agent.waitForSnapshot('web is mounted', (s) => s.actual.volumes.some((v) => v.pods.some((p) => p.podUid === 'web-uid' && p.mountState === 'mounted')), 20_000);
    const tokenFile = join(base, 'token');
    await writeFile(tokenFile, agent.token, { mode: 0o600 });
    const run = await execFileAsync(bin, ['pod', 'web', `--agent-url=${agent.baseUrl}`, `--token-file=${tokenFile}`]);
    expect(run.stdout).toContain('Pod default/web (uid web-uid) on node node-krew');
    expect(run.stdout).toContain('unmounted volumes=[], unattached volumes=[]');
  });
});
