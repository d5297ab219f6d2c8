/**
 * Integration tests of the node agent PROCESS in observe mode: the real agent
 * (`agent/main.ts --mode=observe`) reads a kubelet-style root dir built by the test, with real
 * mounts (tmpfs, as root in a private mount namespace) or the unprivileged mounter's stand-in
 * table (`--allow-mount=false`), and its pods from the Kubernetes-protocol test server through
 * the real client. It must plan what the kubelet still has to do, read the kubelet's backoff from
 * its events, classify orphaned pod directories, and refuse or perform the guarded cleanup — and
 * change nothing else on disk. The cleanup needs the kernel's mount table: with real mounts the
 * agent runs with `--allow-orphan-cleanup`; with stand-ins the flag is refused at start, so the
 * agent runs without it and every cleanup is refused as disabled.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiErrorBodySchema } from '../lib/api/api-error.ts';
import { OrphanCleanupResponseSchema } from '../lib/api/actions.ts';
import type { Snapshot } from '../lib/api/snapshot.ts';
import { cleanUpTempDir, makeTempDir, mountMode, realMountsAllowed } from '../lib/mount-utils/testing/mount-test-env.ts';
import { LinuxMounter, type Mounter } from '../lib/mount-utils/mounter.ts';
import { FakeApiServer } from '../lib/sources/kube/testing/fake-apiserver.ts';
import { writeKubeconfigFile } from '../lib/sources/kube/testing/kubeconfig-file.ts';
import { AgentProcess, agentArgs, mountsBelow, runAgentToExit, standInMounter } from './node/testing/agent-process.ts';
import { waitFor } from '../lib/clock/testing/wait-for.ts';
import { buildObservedKubeletRoot, OBSERVED_FAILED_AT as FAILED_AT, OBSERVED_PLANNED_KEY, OBSERVED_RETRY_AT, putObservedApiObjects } from './node/testing/observed-kubelet.ts';

const NODE = 'node-a';
const DEADLINE_MS = 20_000;
const RETRY_AT = OBSERVED_RETRY_AT;

interface Env {
  base: string;
  rootDir: string;
  api: FakeApiServer;
  agent: AgentProcess;
  mounter: Mounter;
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function podDir(env: Pick<Env, 'rootDir'>, uid: string): string {
  return join(env.rootDir, 'pods', uid);
}

async function startEnv(): Promise<Env> {
  const base = await makeTempDir('volumescope-observe-');
  const rootDir = join(base, 'kubelet');
  await mkdir(rootDir, { recursive: true });
  const mounter: Mounter = realMountsAllowed ? new LinuxMounter() : standInMounter(rootDir);
  cleanups.push(async () => {
    await cleanUpTempDir(base, realMountsAllowed ? undefined : standInMounter(rootDir));
  });
  await buildObservedKubeletRoot(rootDir, mounter);

  const api = await FakeApiServer.start({ token: 'observer-token' });
  cleanups.push(() => api.close());
  putObservedApiObjects(api, NODE);
  const kubeconfig = await writeKubeconfigFile(join(base, 'kubeconfig'), { server: api.url, token: 'observer-token' });
  const tokenFile = join(base, 'agent-token');
  const agent = await AgentProcess.start({
    rootDir,
    manifestDir: join(base, 'unused-manifests'),
    tokenFile,
    nodeName: NODE,
    extraArgs: ['--mode=observe', '--kubeconfig', kubeconfig, ...(realMountsAllowed ? ['--allow-orphan-cleanup'] : []), '--observe-refresh-period=500ms'],
  });
  cleanups.push(async () => {
    await agent.stop('SIGKILL');
  });
  return { base, rootDir, api, agent, mounter };
}

const PLANNED_KEY = OBSERVED_PLANNED_KEY;

/** The section once a refresh has seen the orphans and read pod b's events for its planned mount. */
function observed(s: Snapshot): NonNullable<Snapshot['observe']> | false {
  const o = s.observe;
  return o !== undefined && o.orphans.length > 0 && o.plan.some((p) => p.key === PLANNED_KEY && p.kubeletBackoff !== null) && o;
}

describe(`node agent in observe mode (${mountMode})`, { timeout: 60_000 }, () => {
  it('plans what the kubelet still has to do with its backoff, classifies orphans, refuses the cleanup of a live pod and of a still-mounted orphan, and cleans an unmounted one (real mounts; with stand-ins the cleanup is disabled), changing nothing else', async () => {
    const env = await startEnv();
    const mountsBefore = (await mountsBelow(env.rootDir)).map((m) => m.mountPoint).sort();
    expect(mountsBefore).toEqual([join(podDir(env, 'uid-a'), 'volumes/kubernetes.io~secret/creds'), join(podDir(env, 'uid-o1'), 'volumes/kubernetes.io~secret/tok')].sort());

    const obs = await env.agent.waitForSnapshot('the first observe refresh with orphans', observed, DEADLINE_MS);

    // The plan: pod b's emptyDir is still to be mounted, with the kubelet's own backoff from its event.
    const planned = obs.plan.find((p) => p.key === PLANNED_KEY);
    expect(planned).toMatchObject({ operation: 'volume_mount', podUid: 'uid-b', pod: 'default/b', outerVolumeName: 'scratch' });
    expect(planned?.kubeletBackoff).toMatchObject({ retryAt: RETRY_AT, durationBeforeRetryMs: 64_000, basis: 'message', error: expect.stringContaining('no space left on device') as string });
    // The event says SetUp failed: as far as the kubelet is concerned the volume's earlier steps
    // are done, so the plan holds the pod's mount alone, and says how far the kubelet got.
    expect(planned?.kubeletBackoff).toMatchObject({ operation: 'MountVolume.SetUp', reason: 'FailedMount', count: 7 });
    expect(obs.plan.filter((p) => p.volume === 'kubernetes.io/empty-dir/uid-b-scratch').map((p) => p.operation)).toEqual(['volume_mount']);
    expect(planned?.reason).toContain('SetUp');
    expect(planned?.reason).not.toContain('step 2');
    // The orphans' emptyDirs are directories, not mounts: found on disk, not confirmed; o1's secret is mounted.
    expect(obs.plan.find((p) => p.key === 'volume_unmount|kubernetes.io/empty-dir/uid-o2-x|uid-o2')?.reason).toMatch(/^found on disk, not confirmed: nothing is mounted there/);
    expect(obs.plan.find((p) => p.key === 'volume_unmount|kubernetes.io/secret/uid-o1-tok|uid-o1')?.reason).toMatch(/^mounted for a pod that no longer wants it/);
    // "Recent events" are the kubelet's, as read from the API server.
    const withEvents = await env.agent.waitForSnapshot('the kubelet events in recentEvents', (s) => s.recentEvents.length > 0 && s, DEADLINE_MS);
    expect(withEvents.recentEvents).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'FailedMount', podUid: 'uid-b', volume: 'kubernetes.io/empty-dir/uid-b-scratch', count: 7, time: Math.floor(FAILED_AT / 1000) * 1000 }),
    ]);
    // Pod a's volumes are on disk: nothing to mount for it.
    expect(obs.plan.filter((p) => p.podUid === 'uid-a' && p.operation === 'volume_mount')).toEqual([]);

    // Orphans: o1 still has a mount, o2 only an empty volume directory; a and b are not orphans.
    expect(obs.orphans.map((o) => [o.podUid, o.verdict])).toEqual([
      ['uid-o1', 'mounted'],
      ['uid-o2', 'empty-volume-dirs'],
    ]);
    const tok = obs.orphans[0]?.volumes.find((v) => v.volumeName === 'tok');
    expect(tok?.state).toBe('mount-point');

    // The truth diff names the VolumeAttachment error under the volume's unique name.
    const row = obs.truthDiff.find((r) => r.key === 'kubernetes.io/csi/csi.example.com^h-x');
    expect(row?.volumeAttachments).toEqual([{ name: 'csi-0123', attached: false, attachError: 'rpc error: code = ResourceExhausted desc = too many disks on the node', detachError: null, deleting: false }]);
    expect(row?.findings.map((f) => f.code)).toContain('va-error');

    // The managed-mode actions are refused: the mounts are the kubelet's.
    const unmount = await env.agent.post('/api/v1/unmount', { podUid: 'uid-a', volume: 'kubernetes.io/secret/uid-a-creds' });
    expect(unmount.status).toBe(409);
    expect(ApiErrorBodySchema.parse(unmount.body).error.checks).toEqual([{ name: 'managed-mode', ok: false, detail: 'the agent runs with --mode=observe beside a kubelet' }]);
    expect((await env.agent.post('/api/v1/operations/retry', { volume: 'kubernetes.io/empty-dir/uid-b-scratch', podUid: 'uid-b' })).status).toBe(409);
    expect((await mountsBelow(env.rootDir)).map((m) => m.mountPoint).sort()).toEqual(mountsBefore);

    if (!realMountsAllowed) {
      // Stand-in mounts: no --allow-orphan-cleanup, so every cleanup (even a dry run) is refused as disabled.
      expect(obs.cleanupAllowed).toBe(false);
      const disabled = await env.agent.post('/api/v1/orphans/cleanup', { podUid: 'uid-o1', dryRun: true });
      expect(disabled.status).toBe(409);
      expect(ApiErrorBodySchema.parse(disabled.body).error.checks).toEqual([
        { name: 'cleanup-enabled', ok: false, detail: 'the orphan cleanup is disabled: the agent runs without --allow-orphan-cleanup' },
      ]);
      expect((await mountsBelow(env.rootDir)).map((m) => m.mountPoint).sort()).toEqual(mountsBefore);
      return;
    }
    // The mount table the agent reads is the root dir's: nothing blocks the cleanup.
    expect(obs).toMatchObject({ cleanupAllowed: true, cleanupBlocked: null });

    // The cleanup of a pod the API knows is refused with the reason, and its mount stays.
    const refused = await env.agent.post('/api/v1/orphans/cleanup', { podUid: 'uid-a' });
    expect(refused.status).toBe(409);
    const refusal = ApiErrorBodySchema.parse(refused.body).error;
    expect(refusal.message).toContain('pod-known-to-api');
    expect(refusal.checks?.some((c) => !c.ok)).toBe(true);

    // A pod the API server has but the informer has not seen (its watch lost the event) is not an
    // orphan: "gone" is decided by a live read of the node's pods right before acting.
    const held = env.api.holdRequests({ resource: 'pods', verb: 'watch' });
    const watches = env.api.requests({ resource: 'pods', verb: 'watch' }).length;
    env.api.dropWatches('pods');
    await waitFor(() => env.api.requests({ resource: 'pods', verb: 'watch' }).length > watches, { what: 'the agent\'s held pod re-watch' });
    env.api.put('pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'late', namespace: 'default', uid: 'uid-o2' }, spec: { nodeName: NODE, containers: [{ name: 'c', image: 'i' }] } });
    const unseen = await env.agent.post('/api/v1/orphans/cleanup', { podUid: 'uid-o2', dryRun: true });
    held.release();
    expect(unseen.status).toBe(409);
    const unseenChecks = ApiErrorBodySchema.parse(unseen.body).error.checks ?? [];
    expect(unseenChecks.find((c) => c.name === 'pod-known-to-api')).toEqual({ name: 'pod-known-to-api', ok: false, detail: 'yes' });
    expect(unseenChecks.find((c) => c.name === 'desired-state-incomplete')?.ok).toBe(true);

    // o1's verdict says its tmpfs is still mounted and the kubelet has to unmount it first: the
    // cleanup refuses (even as a dry run) instead of unmounting in the kubelet's place.
    const mountedOrphan = await env.agent.post('/api/v1/orphans/cleanup', { podUid: 'uid-o1', dryRun: true });
    expect(mountedOrphan.status).toBe(409);
    const verdictCheck = (ApiErrorBodySchema.parse(mountedOrphan.body).error.checks ?? []).find((c) => c.name === 'kubelet-must-unmount');
    expect(verdictCheck?.ok).toBe(false);
    expect(verdictCheck?.detail).toContain('the kubelet has to unmount');
    expect((await mountsBelow(env.rootDir)).map((m) => m.mountPoint).sort()).toEqual(mountsBefore);

    // o2 (gone from the API again) has nothing mounted: the dry run says it unmounts nothing and
    // changes nothing; the cleanup removes its empty directories.
    env.api.remove('pods', 'default', 'late');
    await env.agent.waitForSnapshot('the informer saw pod late go', (s) => !s.desired.pods.some((p) => p.uid === 'uid-o2') && s, DEADLINE_MS);
    const dry = await env.agent.post('/api/v1/orphans/cleanup', { podUid: 'uid-o2', dryRun: true });
    expect(dry.status).toBe(200);
    expect(OrphanCleanupResponseSchema.parse(dry.body)).toMatchObject({ outcome: 'planned', unmounts: [] });
    expect(await readdir(podDir(env, 'uid-o2'))).toEqual(['volumes']);
    const done = await env.agent.post('/api/v1/orphans/cleanup', { podUid: 'uid-o2' });
    expect(done.status).toBe(200);
    const result = OrphanCleanupResponseSchema.parse(done.body);
    expect(result.outcome).toBe('completed');
    expect(result.unmounts).toEqual([]);
    expect(result.removals).toContain(podDir(env, 'uid-o2'));
    expect((await mountsBelow(env.rootDir)).map((m) => m.mountPoint).sort()).toEqual(mountsBefore);
    expect(await readFile(join(podDir(env, 'uid-o1'), 'volumes/kubernetes.io~empty-dir/data/left-behind.log'), 'utf8')).toBe('old data');

    // Pod a is untouched; the actions are in the audit log; o2 is gone from the orphans.
    expect(await readFile(join(podDir(env, 'uid-a'), 'volumes/kubernetes.io~empty-dir/cache/state.db'), 'utf8')).toBe('live data');
    const after = await env.agent.waitForSnapshot(
      'o2 is re-inspected after the cleanup',
      (s) => s.observe !== undefined && !s.observe.orphans.some((o) => o.podUid === 'uid-o2') && s,
      DEADLINE_MS,
    );
    expect(after.audit.map((e) => [e.action, e.target, e.result])).toEqual([
      ['unmount', 'uid-a/kubernetes.io/secret/uid-a-creds', 'refused'],
      ['retry', 'uid-b/kubernetes.io/empty-dir/uid-b-scratch', 'refused'],
      ['orphan-cleanup', 'uid-a', 'refused'],
      ['orphan-cleanup-dry-run', 'uid-o2', 'refused'],
      ['orphan-cleanup-dry-run', 'uid-o1', 'refused'],
      ['orphan-cleanup-dry-run', 'uid-o2', 'succeeded'],
      ['orphan-cleanup', 'uid-o2', 'succeeded'],
    ]);
    // Observe mode wrote no node status and posted no events.
    expect(env.api.requests({ verb: 'patch' })).toEqual([]);
    expect(env.api.requests({ resource: 'events', verb: 'create' })).toEqual([]);
  });

  it('refuses to start with --allow-orphan-cleanup and --allow-mount=false, naming both flags', async () => {
    // Arrange
    const base = await makeTempDir('volumescope-observe-flags-');
    cleanups.push(async () => {
      await cleanUpTempDir(base);
    });
    const rootDir = join(base, 'kubelet');
    await mkdir(rootDir);
    const args = agentArgs({ rootDir, manifestDir: base, extraArgs: ['--mode=observe', '--kubeconfig', join(base, 'missing-kubeconfig'), '--allow-orphan-cleanup', '--allow-mount=false'] });

    // Act
    const r = await runAgentToExit(args);

    // Assert
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--allow-orphan-cleanup: cannot be used with --allow-mount=false');
    expect(await readdir(rootDir)).toEqual([]);
  });
});
