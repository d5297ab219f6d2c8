/**
 * The real attach path, end to end, with agent-0 as the node: a PVC of class csi-hostpath is
 * provisioned by the real external-provisioner, a pod bound to agent-0 makes the real
 * attach/detach controller create the VolumeAttachment, the real external-attacher attaches it,
 * the agent stages and publishes through the CSI driver; the data outlives a pod delete and
 * re-create and a kill -9 of the agent; an expansion goes through the real external-resizer and
 * the agent's node expansion until the claim reports the new size; the last pod's delete makes the
 * agent unpublish, unstage and clear volumesInUse, and the controller detach.
 *
 * The test process shares the agent's private mount namespace (scripts/cluster/test.mjs), so
 * /proc/self/mountinfo is the node's mount table.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER, NODE } from '../../scripts/cluster/cluster.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { cluster, facts, mountTable, versionTag } from './cluster-context.ts';

const VERSIONS = [versionTag('kube-apiserver'), versionTag('kube-controller-manager'), versionTag('csi-attacher'), versionTag('csi-provisioner'), versionTag('csi-resizer')].join(', ');
const NS = 'attach-path';
const CLAIM = 'data';
/** Long enough for a loaded 2-core machine; the steps take seconds when it is quiet. */
const STEP_MS = 120_000;
/** A pod sync (1 min) plus the steps after it. */
const RESYNC_MS = 180_000;

interface Meta {
  name: string;
  uid: string;
  deletionTimestamp?: string;
}
interface Pod {
  metadata: Meta;
}
interface Claim {
  metadata: Meta;
  spec: { volumeName?: string };
  status: { phase?: string; capacity?: { storage?: string }; conditions?: { type: string }[] };
}
interface Volume {
  metadata: Meta;
  spec: { csi: { driver: string; volumeHandle: string }; capacity: { storage: string } };
}
interface Attachment {
  metadata: Meta;
  spec: { nodeName: string; source: { persistentVolumeName?: string } };
  status?: { attached?: boolean };
}
interface NodeStatus {
  status: { volumesInUse?: string[]; volumesAttached?: { name: string }[] };
}

const getJson = async <T>(args: readonly string[]): Promise<T> => JSON.parse(await cluster.kubectl([...args, '-o', 'json'])) as T;
/** The object, or undefined when the API server says NotFound. */
async function getOptional<T>(args: readonly string[]): Promise<T | undefined> {
  const r = await cluster.kubectlRun([...args, '-o', 'json']);
  if (r.code === 0) return JSON.parse(r.stdout) as T;
  if (r.stderr.includes('NotFound')) return undefined;
  throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
}

const mountPoints = (): string[] => mountTable().map((m) => m.mountPoint);
const isMounted = (path: string): boolean => mountPoints().includes(path);

function podManifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'app', image: 'registry.invalid/app:1', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: CLAIM } }],
    },
  });
}

/** `<root>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount`: where the pod's volume is published. */
const publishPath = (podUid: string, pvName: string): string => join(facts.agent.rootDir, 'pods', podUid, 'volumes', 'kubernetes.io~csi', pvName, 'mount');

async function createPod(name: string): Promise<Pod> {
  await cluster.kubectl(['apply', '-f', '-'], { input: podManifest(name) });
  return getJson<Pod>(['get', 'pod', '-n', NS, name]);
}

async function waitPublished(pod: Pod, pvName: string): Promise<string> {
  const target = publishPath(pod.metadata.uid, pvName);
  await waitFor(() => isMounted(target), { what: `${target} mounted by agent ${NODE}`, timeoutMs: STEP_MS, pollMs: 250, describe: () => `agent log tail: ${tail()}` });
  return target;
}

const tail = (): string => {
  try {
    return readFileSync(facts.agent.logFile, 'utf8').split('\n').slice(-8).join('\n');
  } catch (err) {
    return `(log unreadable: ${String(err)})`;
  }
};

async function deletePodAndWaitGone(name: string): Promise<void> {
  await cluster.kubectl(['delete', 'pod', '-n', NS, name, '--wait=false']);
  await waitFor(async () => (await getOptional<Pod>(['get', 'pod', '-n', NS, name])) === undefined, {
    what: `pod ${NS}/${name} deleted (the agent finishes the graceful delete once its volumes are unmounted)`,
    timeoutMs: STEP_MS,
    pollMs: 500,
  });
}

const uniqueName = (pv: Volume): string => `kubernetes.io/csi/${pv.spec.csi.driver}^${pv.spec.csi.volumeHandle}`;

async function attachmentOf(pvName: string): Promise<Attachment | undefined> {
  const list = await getJson<{ items: Attachment[] }>(['get', 'volumeattachments']);
  return list.items.find((va) => va.spec.source.persistentVolumeName === pvName && va.spec.nodeName === NODE);
}

describe(`the real attach path on agent ${NODE} (${VERSIONS})`, () => {
  let pv: Volume;
  let firstTarget = '';

  beforeAll(async () => {
    await cluster.waitForNodeReady(STEP_MS);
    await cluster.kubectl(['create', 'namespace', NS]);
  });

  afterAll(async () => {
    await cluster.kubectlRun(['delete', 'namespace', NS, '--wait=false']);
  });

  it(`a PVC of class csi-hostpath is provisioned by ${versionTag('csi-provisioner')} through ${DRIVER}`, async () => {
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: CLAIM, namespace: NS },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'csi-hostpath', resources: { requests: { storage: '64Mi' } } },
      }),
    });
    const claim = await waitFor(
      async () => {
        const c = await getJson<Claim>(['get', 'pvc', '-n', NS, CLAIM]);
        return c.status.phase === 'Bound' ? c : undefined;
      },
      { what: `PVC ${NS}/${CLAIM} Bound`, timeoutMs: STEP_MS, pollMs: 500 },
    );
    pv = await getJson<Volume>(['get', 'pv', claim.spec.volumeName ?? '']);
    expect(pv.spec.csi.driver).toBe(DRIVER);
  });

  it('a pod on the node: the controller attaches, the agent stages and publishes, node status carries the volume', async () => {
    const pod = await createPod('writer');
    const va = await waitFor(
      async () => {
        const a = await attachmentOf(pv.metadata.name);
        return a?.status?.attached === true ? a : undefined;
      },
      { what: `VolumeAttachment of ${pv.metadata.name} on ${NODE} attached`, timeoutMs: STEP_MS, pollMs: 500 },
    );
    expect(va.spec.nodeName).toBe(NODE);
    firstTarget = await waitPublished(pod, pv.metadata.name);
    const node = await getJson<NodeStatus>(['get', 'node', NODE]);
    expect(node.status.volumesInUse).toContain(uniqueName(pv));
    expect(node.status.volumesAttached?.map((v) => v.name)).toContain(uniqueName(pv));
    writeFileSync(join(firstTarget, 'survivor.txt'), 'written by the first pod\n');
  });

  it('the data survives a pod delete and re-create', async () => {
    await deletePodAndWaitGone('writer');
    await waitFor(() => !isMounted(firstTarget), { what: `${firstTarget} unmounted after the pod delete`, timeoutMs: STEP_MS, pollMs: 250 });
    const pod = await createPod('reader');
    const target = await waitPublished(pod, pv.metadata.name);
    expect(readFileSync(join(target, 'survivor.txt'), 'utf8')).toBe('written by the first pod\n');
  });

  it('a kill -9 of the agent leaves the running pod mounted; the restarted agent reconstructs and keeps serving it', async () => {
    const pod = await getJson<Pod>(['get', 'pod', '-n', NS, 'reader']);
    const target = publishPath(pod.metadata.uid, pv.metadata.name);
    expect(await cluster.restartAgent({ kill9: true })).toEqual({ code: null, signal: 'SIGKILL' });
    expect(isMounted(target)).toBe(true);
    await cluster.waitForNodeReady(STEP_MS);
    // After reconstruction and the first sync, the volume is reported in use again and stays mounted.
    await waitFor(async () => (await getJson<NodeStatus>(['get', 'node', NODE])).status.volumesInUse?.includes(uniqueName(pv)), {
      what: `volumesInUse lists ${uniqueName(pv)} after the restart`,
      timeoutMs: STEP_MS,
      pollMs: 500,
    });
    expect(isMounted(target)).toBe(true);
    expect(readFileSync(join(target, 'survivor.txt'), 'utf8')).toBe('written by the first pod\n');
  });

  it(`expanding the PVC goes through ${versionTag('csi-resizer')} and the agent's node expansion until the claim reports the new size`, async () => {
    await cluster.kubectl(['patch', 'pvc', '-n', NS, CLAIM, '--type=merge', '-p', JSON.stringify({ spec: { resources: { requests: { storage: '128Mi' } } } })]);
    await waitFor(async () => (await getJson<Volume>(['get', 'pv', pv.metadata.name])).spec.capacity.storage === '128Mi', {
      what: `PV ${pv.metadata.name} capacity 128Mi (ControllerExpandVolume through the resizer)`,
      timeoutMs: STEP_MS,
      pollMs: 500,
    });
    const claim = await waitFor(
      async () => {
        const c = await getJson<Claim>(['get', 'pvc', '-n', NS, CLAIM]);
        return c.status.capacity?.storage === '128Mi' ? c : undefined;
      },
      // The node expansion starts at the pod's next sync (--sync-frequency, 1 min), as the kubelet's.
      { what: `PVC ${NS}/${CLAIM} status.capacity 128Mi (node expansion by agent ${NODE})`, timeoutMs: RESYNC_MS, pollMs: 500 },
    );
    expect(claim.status.conditions?.map((c) => c.type) ?? []).not.toContain('FileSystemResizePending');
  });

  it('the last pod goes: unpublish, unstage, volumesInUse cleared, the controller detaches and the VolumeAttachment disappears', async () => {
    const pod = await getJson<Pod>(['get', 'pod', '-n', NS, 'reader']);
    const target = publishPath(pod.metadata.uid, pv.metadata.name);
    await deletePodAndWaitGone('reader');
    expect(isMounted(target)).toBe(false);
    const stagingRoot = join(facts.agent.rootDir, 'plugins', 'kubernetes.io', 'csi');
    await waitFor(() => !mountPoints().some((m) => m.startsWith(stagingRoot) && m.endsWith('/globalmount')), {
      what: `the staging mount below ${stagingRoot} unmounted (NodeUnstageVolume)`,
      timeoutMs: STEP_MS,
      pollMs: 250,
    });
    await waitFor(() => !existsSync(join(facts.agent.rootDir, 'pods', pod.metadata.uid)), { what: `pod directory of ${pod.metadata.uid} removed`, timeoutMs: STEP_MS, pollMs: 250 });
    await waitFor(async () => !((await getJson<NodeStatus>(['get', 'node', NODE])).status.volumesInUse ?? []).includes(uniqueName(pv)), {
      what: 'volumesInUse cleared',
      timeoutMs: STEP_MS,
      pollMs: 500,
    });
    await waitFor(async () => (await attachmentOf(pv.metadata.name)) === undefined, {
      what: `VolumeAttachment of ${pv.metadata.name} deleted (detached)`,
      timeoutMs: STEP_MS,
      pollMs: 500,
    });
    const node = await getJson<NodeStatus>(['get', 'node', NODE]);
    expect(node.status.volumesAttached?.map((v) => v.name) ?? []).not.toContain(uniqueName(pv));
  });
});
