/**
 * Observe mode beside the upstream kubelet: an observe-mode agent (scripts/cluster/observer.ts
 * startKubeletObserver, the flags and ClusterRole of deploy/) on node kubelet-0's root dir and the
 * mount table of the cluster's private mount namespace, read through its HTTP API (the snapshot's
 * `observe` section and `POST /api/v1/orphans/cleanup`) while the real kubelet does the work.
 *
 * What the real kubelet leaves to see:
 * - outstanding work: a hostPath of type Directory that does not exist (SetUp fails for ever), and
 *   a CSI volume whose NodePublishVolume fails (a fault injected in kubelet-0's csi-loop instance
 *   through its control API, so the kubelet's real CSI call fails: the volume is attached and
 *   staged, not published);
 * - orphaned pod directories: pods force-deleted while the kubelet is stopped
 *   (RunningCluster.stopKubelet through the global setup's control server), one with tmpfs mounts,
 *   one whose only volume is a disk emptyDir (nothing mounted);
 * - node status, VolumeAttachments and Events, read here with kubectl and compared with the
 *   observer's truth diff and back-off view.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Observe, PlannedOperation } from '../../lib/api/observe.ts';
import { parseSnapshot } from '../../lib/api/compact-snapshot.ts';
import type { ContainerState } from '../../lib/api/snapshot.ts';
import { parseKubeletBackoff, type KubeletBackoff as KubeletLogBackoff } from '../../lib/observe/kubelet-backoff-events.ts';
import { KUBELET_NODE, type ClusterAgent } from '../../scripts/cluster/cluster.ts';
import { startKubeletObserver } from '../../scripts/cluster/observer.ts';
import { waitUntil } from '../../scripts/demo/process.ts';
import { claimYaml, cluster, facts, mountTable, podEvents, podUid as podUidIn, tearDownWorkload, versionTag, waitForClaimBound } from './cluster-context.ts';

const NS = 'observe-kubelet-test';
const [KUBELET, API, ADC] = ['kubelet', 'kube-apiserver', 'kube-controller-manager'].map(versionTag);
const ROOT = facts.kubelet.rootDir;
/** hostPath volumes of the tests live below the state dir. */
const HOST_PATHS = join(facts.stateDir, 'host-paths', NS);

let observer: ClusterAgent;
let token = '';
/** Set while this file has kubelet-0 stopped: afterAll starts it again for the files after this one. */
let kubeletStopped = false;

async function api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${observer.facts.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, json: await res.json() };
}

/** The containers' states the observer's snapshot carries for a pod (`desired.pods[].containers`). */
async function snapshotContainers(uid: string): Promise<ContainerState[] | undefined> {
  const r = await api('GET', '/api/v1/snapshot');
  expect(r.status).toBe(200);
  return parseSnapshot(r.json).desired.pods.find((p) => p.uid === uid)?.containers;
}

async function observed(): Promise<Observe> {
  const r = await api('GET', '/api/v1/snapshot');
  expect(r.status).toBe(200);
  const section = parseSnapshot(r.json).observe;
  if (section === undefined) throw new Error('the snapshot has no observe section');
  return section;
}

/** Polls the observe section until `probe` returns a value. */
const waitObserved = <T>(what: string, probe: (o: Observe) => T | undefined | false, deadlineMs = 90_000): Promise<T> =>
  waitUntil(what, async () => probe(await observed()), { deadlineMs, intervalMs: 500, process: observer.process ?? undefined });

/** A refresh that started after `since` (epoch ms): what the observer says now, not before. */
const freshObserved = (since: number): Promise<Observe> => waitObserved(`an observe refresh after ${new Date(since).toISOString()}`, (o) => (o.refreshedAt !== null && o.refreshedAt > since + 1000 ? o : undefined), 30_000);

/** The UIDs of this file's pods, whose mounts afterAll waits to see torn down. */
const podUids = new Set<string>();
const podUid = async (pod: string): Promise<string> => {
  const uid = await podUidIn(NS, pod);
  podUids.add(uid);
  return uid;
};
/** The staging mount of this file's CSI volume, once known. */
let csiStaging: string | null = null;

const waitRunning = (pod: string): Promise<string> =>
  waitUntil(`pod ${pod} Running`, async () => ((await cluster.kubectl(['get', 'pod', pod, '-n', NS, '-o', 'jsonpath={.status.phase}'])).trim() === 'Running' ? 'Running' : undefined), { deadlineMs: 90_000, intervalMs: 1000 });

const podYaml = (name: string, volumes: readonly string[], mounts: readonly string[], extraSpec: readonly string[] = []): string =>
  [
    'apiVersion: v1',
    'kind: Pod',
    `metadata: {name: ${name}, namespace: ${NS}}`,
    'spec:',
    `  nodeName: ${KUBELET_NODE}`,
    ...extraSpec.map((l) => `  ${l}`),
    '  containers:',
    '  - name: app',
    '    image: registry.k8s.io/pause:3.10',
    ...(mounts.length === 0 ? [] : ['    volumeMounts:', ...mounts.map((m) => `    - {name: ${m}, mountPath: /mnt/${m}}`)]),
    ...(volumes.length === 0 ? [] : ['  volumes:', ...volumes.map((v) => `  - ${v}`)]),
  ].join('\n');

const planOf = (o: Observe, pod: string): PlannedOperation[] => o.plan.filter((p) => p.pod === `${NS}/${pod}`);

/** Every "No retries permitted until" line of the kubelet's log that names `needle`, parsed (lib/observe's parser). */
async function loggedBackoffs(needle: string): Promise<KubeletLogBackoff[]> {
  const lines = (await cluster.kubeletLog()).split('\n').filter((l) => l.includes('No retries permitted until') && l.includes(needle));
  return lines.flatMap((l) => {
    const b = parseKubeletBackoff(l);
    return b === null ? [] : [b];
  });
}

beforeAll(async () => {
  await cluster.kubectl(['create', 'namespace', NS]);
  await cluster.waitForKubeletNodeReady(60_000);
  observer = await startKubeletObserver(facts, { allowOrphanCleanup: true, refreshPeriod: '1s' });
  token = readFileSync(observer.facts.tokenFile, 'utf8').trim();
});

afterAll(async () => {
  if (kubeletStopped) await cluster.startKubelet();
  await fetch(`${facts.kubelet.csiControlUrl}/faults`, { method: 'DELETE', signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
  // The kubelet tears down this file's pods before the next file runs: their mounts (the CSI
  // volume's staging mount among them) would otherwise be in that file's view of the node.
  await tearDownWorkload({
    namespaces: [NS],
    ownsMount: (mp) => mp === csiStaging || [...podUids].some((uid) => mp.startsWith(`${join(ROOT, 'pods', uid)}/`)),
    deadlineMs: 120_000,
  });
  const exit = await observer.stop();
  expect(exit?.code, await observer.log()).toBe(0);
});

describe(`observe mode beside the upstream kubelet on ${KUBELET_NODE} (${KUBELET}, ${API})`, () => {
  it(`reads the kubelet's root dir with the observe ClusterRole of deploy/ and writes nothing there (${KUBELET})`, async () => {
    const o = await waitObserved('the first observe refresh', (s) => (s.refreshedAt === null ? undefined : s));
    expect(o.kubeletRootDir).toBe(ROOT);
    expect(o.refreshError).toBeNull();
    expect(o.cleanupAllowed).toBe(true);
    // The mount table (/proc/self/mountinfo in the cluster's namespace) describes the root dir.
    expect(o.cleanupBlocked).toBeNull();
    expect(existsSync(join(ROOT, 'agent-token'))).toBe(false);
    expect(readdirSync(ROOT).some((n) => n.includes('volumescope'))).toBe(false);
  });

  it(`a pod whose volumes the kubelet set up has nothing outstanding; a hostPath of type Directory that is missing is a volume_mount the kubelet keeps failing (${KUBELET})`, async () => {
    const missing = join(HOST_PATHS, 'missing');
    await cluster.kubectl(['apply', '-f', '-'], {
      input: [
        podYaml('healthy', ['{name: disk, emptyDir: {}}', `{name: host, hostPath: {path: ${join(HOST_PATHS, 'created')}, type: DirectoryOrCreate}}`], ['disk', 'host']),
        podYaml('missing-host-path', [`{name: gone, hostPath: {path: ${missing}, type: Directory}}`], ['gone']),
      ].join('\n---\n'),
    });
    const healthyUid = await podUid('healthy');
    const missingUid = await podUid('missing-host-path');
    await waitRunning('healthy');
    const runningAt = Date.now();
    const op = await waitObserved('the missing hostPath planned, with the kubelet back-off', (o) => planOf(o, 'missing-host-path').find((p) => p.outerVolumeName === 'gone' && p.kubeletBackoff !== null));
    const o = await freshObserved(runningAt);
    expect(op).toMatchObject({ operation: 'volume_mount', podUid: missingUid });
    expect(op.reason).toMatch(/^desired by the pod, not mounted; .*the kubelet leaves nothing on disk for a hostPath volume/);
    expect(planOf(o, 'healthy').map((p) => `${p.operation} ${p.outerVolumeName ?? ''}`)).toEqual([]);
    // Nor a volume-wide operation of its volumes (the verification names no pod, the volume names it).
    expect(o.plan.filter((p) => p.podUid === healthyUid || p.volume.includes(healthyUid)).map((p) => p.key)).toEqual([]);

    // What the Events tell: the error, a repeat count and a whole-second timestamp, never the
    // deadline ("No retries permitted until" is only in the kubelet's log), so the observer's
    // back-off is an estimate from the count (basis event-count), not a reading.
    const events = await podEvents(NS, 'missing-host-path', 'FailedMount');
    expect(events.map((e) => e.message)).toContain(`MountVolume.SetUp failed for volume "gone" : hostPath type check failed: ${missing} is not a directory`);
    expect(events.every((e) => !e.message.includes('No retries permitted until'))).toBe(true);
    const backoff = op.kubeletBackoff;
    expect(backoff).toMatchObject({ basis: 'event-count', error: `hostPath type check failed: ${missing} is not a directory` });
    if (backoff === null) throw new Error('no back-off');
    // Against the log: the failure the Event counted is logged with its exact window; the estimate
    // has the same window and a deadline within the second the Event's timestamp drops.
    const logged = await loggedBackoffs(`{volumeName:kubernetes.io/host-path/${missingUid}-gone `);
    const same = logged.find((l) => l.durationBeforeRetryMs === backoff.durationBeforeRetryMs && Math.abs(l.failedAt - (backoff.observedAt ?? 0)) < 2000);
    console.log(`hostPath back-off: estimated ${new Date(backoff.retryAt).toISOString()} (${backoff.durationBeforeRetryMs} ms), logged ${same === undefined ? 'none' : `${new Date(same.retryAt).toISOString()} (${same.durationBeforeRetryMs} ms)`}; ${logged.length} failures logged`);
    expect(same, JSON.stringify({ backoff, logged })).toBeDefined();
    expect(Math.abs((same?.retryAt ?? 0) - backoff.retryAt)).toBeLessThan(2000);

    // The containers' states the kubelet wrote, as kubectl reads them: the stuck pod's container
    // waits in ContainerCreating (dated from the agent's first sight: the API has no time for it),
    // the healthy one runs since the kubelet's startedAt.
    const waiting = await waitUntil('the stuck pod’s container state in the snapshot', async () => (await snapshotContainers(missingUid))?.[0], { deadlineMs: 30_000, intervalMs: 500 });
    const [reason, ready] = (await cluster.kubectl(['get', 'pod', 'missing-host-path', '-n', NS, '-o', 'jsonpath={.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].ready}'])).trim().split(' ');
    expect(reason).toBe('ContainerCreating');
    expect(waiting).toMatchObject({ name: 'app', kind: 'container', state: 'waiting', reason, sinceObserved: true, ready: ready === 'true' });
    const running = await waitUntil('the healthy pod’s container running in the snapshot', async () => (await snapshotContainers(healthyUid))?.find((c) => c.state === 'running'), { deadlineMs: 30_000, intervalMs: 500 });
    const startedAt = (await cluster.kubectl(['get', 'pod', 'healthy', '-n', NS, '-o', 'jsonpath={.status.containerStatuses[0].state.running.startedAt}'])).trim();
    expect(running).toMatchObject({ name: 'app', sinceObserved: false, since: Date.parse(startedAt) });
  });

  it(`a CSI volume whose NodePublishVolume fails (a fault in ${KUBELET_NODE}'s csi-loop): attached and staged, its mount outstanding with the kubelet's back-off; the truth diff is the Node status and VolumeAttachments as kubectl reads them; published once the fault is cleared (${KUBELET}, ${ADC})`, async () => {
    const fault = await fetch(`${facts.kubelet.csiControlUrl}/faults/NodePublishVolume`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'INTERNAL', message: 'injected by observe-kubelet.test' }), signal: AbortSignal.timeout(10_000) });
    expect(fault.status).toBe(200);
    const pod = 'csi-publish-fails';
    await cluster.kubectl(['apply', '-f', '-'], {
      input: [claimYaml(NS, 'data'), podYaml(pod, ['{name: data, persistentVolumeClaim: {claimName: data}}'], ['data'])].join('\n---\n'),
    });
    const uid = await podUid(pod);
    const pv = await waitForClaimBound(NS, 'data');
    const handle = ((JSON.parse(await cluster.kubectl(['get', 'pv', pv, '-o', 'json'])) as { spec: { csi: { volumeHandle: string } } }).spec.csi.volumeHandle);
    const unique = `kubernetes.io/csi/${facts.driverName}^${handle}`;
    const failed = await waitUntil(`a FailedMount Event of pod ${pod}`, async () => (await podEvents(NS, pod, 'FailedMount')).find((e) => e.message.startsWith(`MountVolume.SetUp failed for volume "${pv}"`)), { deadlineMs: 90_000, intervalMs: 1000 });
    expect(failed.message).toBe(`MountVolume.SetUp failed for volume "${pv}" : rpc error: code = Internal desc = injected by observe-kubelet.test`);

    const op = await waitObserved('the CSI mount planned with the kubelet back-off', (o) => planOf(o, pod).find((p) => p.volume === unique && p.operation === 'volume_mount' && p.kubeletBackoff !== null));
    expect(op.kubeletBackoff).toMatchObject({ basis: 'event-count', error: 'rpc error: code = Internal desc = injected by observe-kubelet.test' });

    // The truth diff against what kubectl reads now (after a refresh that started later).
    const readAt = Date.now();
    interface NodeStatus { status: { volumesInUse?: string[]; volumesAttached?: { name: string; devicePath: string }[] } }
    const node = (JSON.parse(await cluster.kubectl(['get', 'node', KUBELET_NODE, '-o', 'json'])) as NodeStatus).status;
    interface Attachment { metadata: { name: string }; spec: { nodeName: string; source: { persistentVolumeName?: string } }; status?: { attached: boolean } }
    const vas = (JSON.parse(await cluster.kubectl(['get', 'volumeattachments', '-o', 'json'])) as { items: Attachment[] }).items.filter((a) => a.spec.nodeName === KUBELET_NODE && a.spec.source.persistentVolumeName === pv);
    const globalMounts = mountTable().filter((m) => m.mountPoint.startsWith(join(ROOT, 'plugins', 'kubernetes.io', 'csi', facts.driverName)) && m.mountPoint.endsWith('/globalmount')).map((m) => m.mountPoint);
    const o = await freshObserved(readAt);
    const row = o.truthDiff.find((r) => r.key === unique);
    expect(row).toBeDefined();
    expect(row?.inUse).toBe((node.volumesInUse ?? []).includes(unique));
    expect(row?.attachedDevicePath).toBe(node.volumesAttached?.find((a) => a.name === unique)?.devicePath ?? null);
    expect(row?.volumeAttachments.map((va) => [va.name, va.attached])).toEqual(vas.map((va) => [va.metadata.name, va.status?.attached === true]));
    expect(row?.globalMounts).toEqual(globalMounts);
    csiStaging = globalMounts[0] ?? null;
    expect(row?.podMounts).toEqual([]);
    // The one disagreement: the pod wants it, nothing is mounted for it (the failing NodePublish).
    expect(row?.findings.map((f) => [f.code, f.severity])).toEqual([['desired-not-mounted', 'warning']]);

    // Cleared: the kubelet's next retry (after its back-off) publishes; the plan and the diff follow.
    const cleared = Date.now();
    await fetch(`${facts.kubelet.csiControlUrl}/faults/NodePublishVolume`, { method: 'DELETE', signal: AbortSignal.timeout(10_000) });
    const target = join(ROOT, 'pods', uid, 'volumes', 'kubernetes.io~csi', pv, 'mount');
    await waitUntil(`the kubelet publishes ${pv}`, () => Promise.resolve(mountTable().some((m) => m.mountPoint === target)), { deadlineMs: 150_000, intervalMs: 250 });
    const publishedAfter = Date.now() - cleared;
    const after = await waitObserved(`the observer sees ${pv} published`, (s) => (planOf(s, pod).length === 0 && s.truthDiff.find((r) => r.key === unique)?.podMounts.length === 1 ? s : undefined), 30_000);
    console.log(`NodePublishVolume fault cleared: published by the kubelet after ${publishedAfter} ms, seen by the observer after ${Date.now() - cleared} ms`);
    expect(after.truthDiff.find((r) => r.key === unique)).toMatchObject({ podMounts: [{ podUid: uid, mountPoint: target }], findings: [] });
  });

  it(`pods force-deleted while the kubelet is stopped leave their directories: the orphan inspector classifies them, cleanup is refused for the mounted one (the kubelet tears it down itself) and works for the empty one; the kubelet, started again, removes the rest (${KUBELET})`, async () => {
    await cluster.kubectl(['apply', '-f', '-'], {
      input: [
        podYaml('orphan-mounted', ['{name: mem, emptyDir: {medium: Memory}}'], ['mem']),
        // No service account token either: the only volume is a directory, nothing is mounted.
        podYaml('orphan-empty', ['{name: disk, emptyDir: {}}'], ['disk'], ['automountServiceAccountToken: false']),
      ].join('\n---\n'),
    });
    const mountedUid = await podUid('orphan-mounted');
    const emptyUid = await podUid('orphan-empty');
    await waitRunning('orphan-mounted');
    await waitRunning('orphan-empty');
    const mountedDir = join(ROOT, 'pods', mountedUid);
    const emptyDir = join(ROOT, 'pods', emptyUid);
    const mountsBelow = (dir: string): string[] => mountTable().filter((m) => m.mountPoint.startsWith(`${dir}/`)).map((m) => m.mountPoint).sort();
    await waitUntil('the tmpfs mounts of orphan-mounted', () => Promise.resolve(mountsBelow(mountedDir).length === 2), { deadlineMs: 30_000, intervalMs: 250 });
    expect(existsSync(join(emptyDir, 'volumes', 'kubernetes.io~empty-dir', 'disk'))).toBe(true);
    expect(mountsBelow(emptyDir)).toEqual([]);
    const mounted = mountsBelow(mountedDir);

    await cluster.stopKubelet();
    kubeletStopped = true;
    for (const pod of ['orphan-mounted', 'orphan-empty']) await cluster.kubectl(['delete', 'pod', pod, '-n', NS, '--grace-period=0', '--force']);
    const deletedAt = Date.now();
    const o = await waitObserved('both orphans listed', (s) => (s.orphans.some((x) => x.podUid === mountedUid) && s.orphans.some((x) => x.podUid === emptyUid) ? s : undefined), 30_000);
    console.log(`orphans listed ${Date.now() - deletedAt} ms after the force deletion`);

    // The inspector: one mounted (two tmpfs: the Memory emptyDir and the projected token), one with an empty volume directory.
    const orphan = (uid: string) => o.orphans.find((x) => x.podUid === uid);
    expect(orphan(mountedUid)).toMatchObject({ path: mountedDir, verdict: 'mounted', leftovers: ['containers', 'etc-hosts', 'plugins'] });
    expect(orphan(mountedUid)?.mounts.map((m) => [m.mountPoint, m.fsType])).toEqual(mounted.map((m) => [m, 'tmpfs']));
    expect(orphan(mountedUid)?.volumes.map((v) => [v.pluginName, v.state])).toEqual([['kubernetes.io/empty-dir', 'mount-point'], ['kubernetes.io/projected', 'mount-point']]);
    expect(orphan(emptyUid)).toMatchObject({ path: emptyDir, verdict: 'empty-volume-dirs', mounts: [], leftovers: ['containers', 'etc-hosts', 'plugins'] });
    expect(orphan(emptyUid)?.volumes.map((v) => [v.path, v.state])).toEqual([[join(emptyDir, 'volumes', 'kubernetes.io~empty-dir', 'disk'), 'empty']]);
    // The plan: the kubelet's teardown of what its reconstruction will find, for pods the API no longer has.
    const teardown = o.plan.filter((p) => p.podUid === mountedUid).map((p) => [p.operation, p.outerVolumeName, p.pod]);
    expect(teardown).toHaveLength(2);
    expect(teardown).toContainEqual(['volume_unmount', 'mem', null]);

    // Cleanup of the mounted one: refused, nothing unmounted.
    const refused = await api('POST', '/api/v1/orphans/cleanup', { podUid: mountedUid });
    expect(refused.status).toBe(409);
    const error = (refused.json as { error: { message: string; checks: { name: string; ok: boolean }[] } }).error;
    // Two checks refuse it: the orphan's own verdict (mounted: the kubelet's to unmount) and the
    // plan, which has the kubelet's teardown of those very mounts.
    expect(error.message).toMatch(/^kubelet-must-unmount: The orphan's verdict leaves this to the kubelet: .*; kubelet-tears-down: 2 mounts below .* belong to volumes the kubelet still tears down itself \(volume_unmount /);
    expect(error.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(['kubelet-must-unmount', 'kubelet-tears-down']);
    expect(mountsBelow(mountedDir)).toEqual(mounted);

    // Cleanup of the empty one: the empty directories go, files stay (listed as kept).
    const done = await api('POST', '/api/v1/orphans/cleanup', { podUid: emptyUid });
    expect(done.status).toBe(200);
    const body = done.json as { outcome: string; unmounts: string[]; removals: string[]; kept: { path: string }[] };
    expect(body).toMatchObject({ outcome: 'completed', unmounts: [] });
    expect(body.removals).toEqual([join(emptyDir, 'volumes', 'kubernetes.io~empty-dir', 'disk'), join(emptyDir, 'volumes', 'kubernetes.io~empty-dir'), join(emptyDir, 'volumes')]);
    expect(body.kept.map((k) => k.path)).toContain(join(emptyDir, 'etc-hosts'));
    expect(existsSync(join(emptyDir, 'volumes'))).toBe(false);
    expect(existsSync(join(emptyDir, 'etc-hosts'))).toBe(true);

    // The kubelet, started again, reconstructs and tears down the mounted one and removes both directories.
    const restartAt = Date.now();
    await cluster.startKubelet();
    kubeletStopped = false;
    await waitUntil('the kubelet removes the orphaned pod dirs', () => Promise.resolve(!existsSync(mountedDir) && !existsSync(emptyDir)), { deadlineMs: 120_000, intervalMs: 250 });
    console.log(`the restarted kubelet removed both orphaned pod dirs ${Date.now() - restartAt} ms after its start`);
    expect(mountsBelow(mountedDir)).toEqual([]);
    await waitObserved('no orphans left', (s) => !s.orphans.some((x) => [mountedUid, emptyUid].includes(x.podUid)) && !s.plan.some((p) => p.podUid === mountedUid), 30_000);
  });
});
