/**
 * What the api-fuzz and malformed-manifests campaigns share: a real agent process (`--source=manifest`,
 * a root dir and a manifest dir in the campaign's work dir, a free port on 127.0.0.1, the token
 * file the agent writes) with a few valid pods whose volumes are mounted, its RSS, and running a
 * campaign stand-alone (`node --import tsx scripts/torture/<campaign>.ts --size=short`).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentProcess, standInMounter } from '../../agent/node/testing/agent-process.ts';
import { podManifest, type VolumeSource } from '../../agent/node/testing/pod-manifest.ts';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { cleanUpTempDir, makeTempDir, realMountsAllowed } from '../../lib/mount-utils/testing/mount-test-env.ts';
import type { Campaign, CampaignSize } from './campaign.ts';

/** A valid pod the campaigns keep running: its file, uid and volumes. */
export interface KeptPod {
  file: string;
  name: string;
  uid: string;
  volumes: readonly string[];
}

/** The valid pods every campaign agent starts with: emptyDirs (one memory-backed) that mount. */
export const KEPT_PODS: readonly KeptPod[] = [
  { file: 'kept-web.yaml', name: 'kept-web', uid: '0d6a4b1e-4c55-4f7e-8f0a-1b2c3d4e5f60', volumes: ['scratch', 'memory'] },
  { file: 'kept-db.yaml', name: 'kept-db', uid: '7e1f2a3b-5d66-4a8f-9b1c-2d3e4f5a6b71', volumes: ['data'] },
];

function keptPodVolumes(pod: KeptPod): Record<string, VolumeSource> {
  return Object.fromEntries(pod.volumes.map((v) => [v, v === 'memory' ? { emptyDir: { medium: 'Memory' } } : { emptyDir: {} }]));
}

/** The kept pods whose volumes are not all mounted in the snapshot (pod, volume), as text. */
export function unmountedKeptVolumes(snapshot: Snapshot): string[] {
  const missing: string[] = [];
  for (const pod of KEPT_PODS) {
    if (!snapshot.desired.pods.some((p) => p.uid === pod.uid)) missing.push(`${pod.name}: not in the desired state`);
    for (const volume of pod.volumes) {
      const mounted = snapshot.actual.volumes.some((v) => v.pods.some((m) => m.podUid === pod.uid && m.outerVolumeName === volume && m.mountState === 'mounted'));
      if (!mounted) missing.push(`${pod.name}/${volume}: not mounted`);
    }
  }
  return missing;
}

export interface AgentUnderTest {
  agent: AgentProcess;
  rootDir: string;
  manifestDir: string;
  /** Stops the agent (SIGTERM) and unmounts what it left below the root dir. */
  stop(): Promise<void>;
}

/**
 * Starts an agent over `<workDir>/root` and `<workDir>/manifests` holding the kept pods plus
 * `extraFiles`, and waits until the kept pods' volumes are mounted.
 */
export async function startAgentUnderTest(workDir: string, extraFiles: Record<string, string> = {}, extraArgs: readonly string[] = []): Promise<AgentUnderTest> {
  const rootDir = join(workDir, 'root');
  const manifestDir = join(workDir, 'manifests');
  await mkdir(manifestDir, { recursive: true });
  for (const pod of KEPT_PODS) await writeFile(join(manifestDir, pod.file), podManifest(pod.name, pod.uid, keptPodVolumes(pod)));
  for (const [name, text] of Object.entries(extraFiles)) await writeFile(join(manifestDir, name), text);
  const agent = await AgentProcess.start({ rootDir, manifestDir, extraArgs });
  try {
    await agent.waitForSnapshot('the kept pods are mounted', (s) => s.statesSynced && unmountedKeptVolumes(s).length === 0, 30_000);
  } catch (err) {
    await agent.stop('SIGKILL');
    throw err;
  }
  return {
    agent,
    rootDir,
    manifestDir,
    stop: async () => {
      await agent.stop('SIGTERM');
      // The agent unmounts nothing on exit (a restart must not touch running pods), so this does.
      await cleanUpTempDir(rootDir, realMountsAllowed ? undefined : standInMounter(rootDir));
    },
  };
}

/** The `--size=` argument of a stand-alone run (default `short`). */
export function sizeFromArgv(argv: readonly string[]): CampaignSize {
  const arg = argv.find((a) => a.startsWith('--size='));
  const size = arg?.slice('--size='.length) ?? 'short';
  if (size !== 'short' && size !== 'full') throw new Error(`--size must be short or full, got ${JSON.stringify(size)}`);
  return size;
}

/**
 * Runs a campaign outside the runner: a fresh temp work dir (removed afterwards), progress on
 * stderr, the JSON result on stdout, exit code 1 unless ok.
 */
export async function runStandalone(campaign: Campaign, argv: readonly string[]): Promise<void> {
  const workDir = await makeTempDir(`volumescope-${campaign.name}-`);
  try {
    const result = await campaign.run({
      size: sizeFromArgv(argv),
      workDir,
      log: (line) => {
        process.stderr.write(`[${campaign.name}] ${line}\n`);
      },
    });
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    process.exitCode = result.ok ? 0 : 1;
  } finally {
    await cleanUpTempDir(workDir, realMountsAllowed ? undefined : standInMounter(join(workDir, 'root')));
  }
}
