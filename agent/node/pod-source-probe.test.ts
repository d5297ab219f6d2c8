import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../lib/clock/clock.ts';
import { KubeSource } from '../../lib/sources/kube/kube-source.ts';
import { FakeApiServer } from '../../lib/sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../lib/sources/kube/testing/kubeconfig-file.ts';
import type { SourceError } from '../../lib/sources/source.ts';
import type { Pod } from '../../lib/volume/k8s-types.ts';
import { nodeName, type PodUID } from '../../lib/volume/types.ts';
import { KubeObjects } from './kube-objects.ts';
import { kubePodSourceProbe, manifestPodSourceProbe } from './pod-source-probe.ts';

const NODE = nodeName('node-a');
const UID = 'web-uid' as PodUID;

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function apiPod(name: string, uid: string, node: string, phase = 'Running'): object {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', uid }, spec: { nodeName: node, containers: [{ name: 'app', image: 'busybox' }] }, status: { phase } };
}

describe('kubePodSourceProbe', () => {
  // The real @kubernetes/client-node against the Kubernetes-protocol test server; the source is
  // never started, so its informer cache is empty: every answer comes from the live LIST.
  async function setup() {
    const api = await FakeApiServer.start({ token: 't' });
    cleanups.push(() => api.close());
    const kubeConfig = fakeKubeConfig({ server: api.url, token: 't' });
    const source = new KubeSource({ kubeConfig, nodeName: NODE, clock: realClock });
    cleanups.push(() => source.stop());
    const objects = new KubeObjects(source, kubeConfig);
    let errors: SourceError[] = [];
    const probe = kubePodSourceProbe(NODE, (n) => objects.listNodePodsLive(n), { sourceErrors: () => errors });
    return {
      api,
      probe,
      setErrors: (e: typeof errors) => {
        errors = e;
      },
    };
  }

  it('finds a pod of this node that the informer cache does not have, with a LIST of the API server', async () => {
    const { api, probe } = await setup();
    api.put('pods', apiPod('web', UID, NODE));

    const lookup = await probe.lookupPod(UID);

    expect(lookup).toEqual({ presence: 'present', detail: 'pod default/web (uid web-uid) exists in the API server (read just now)', pod: { namespace: 'default', name: 'web' } });
    expect(api.requests({ resource: 'pods', verb: 'list' }).map((r) => r.path)).toEqual(['/api/v1/pods']);
  });

  it.each([
    { name: 'absent when no pod of the node has the uid (a pod of the same name was recreated)', pods: [apiPod('web', 'other-uid', NODE)], presence: 'absent' },
    { name: 'terminated in phase Succeeded', pods: [apiPod('web', UID, NODE, 'Succeeded')], presence: 'terminated' },
    { name: 'terminated in phase Failed', pods: [apiPod('web', UID, NODE, 'Failed')], presence: 'terminated' },
  ])('reports the pod $name', async ({ pods, presence }) => {
    const { api, probe } = await setup();
    for (const pod of pods) api.put('pods', pod);

    expect((await probe.lookupPod(UID)).presence).toBe(presence);
  });

  it('rejects with the API error when the LIST fails', async () => {
    const { api, probe } = await setup();
    api.failRequests({ resource: 'pods', verb: 'list', status: 503, message: 'the server is currently unable to handle the request' });

    await expect(probe.lookupPod(UID)).rejects.toThrow(/LIST \/api\/v1\/pods\?fieldSelector=spec.nodeName=node-a: .*unable to handle the request/);
  });

  it('counts the errors of the pod list and those naming the pod, not the others', async () => {
    const { probe, setErrors } = await setup();
    const podList = { file: '/api/v1/pods?fieldSelector=spec.nodeName=node-a', message: 'pods on node node-a: watch failed' };
    const thePod = { file: '/api/v1/namespaces/default/pods/web', message: 'Pod default/web: cannot be read' };
    const byUid = { file: '/api/v1/namespaces/default/persistentvolumeclaims/data', message: 'claim data of pod web-uid: GET failed' };
    const other = { file: '/api/v1/namespaces/default/pods/db', message: 'Pod default/db: cannot be read' };
    const node = { file: '/api/v1/nodes/node-a/status', message: 'node.status.volumesInUse not reported' };
    setErrors([podList, thePod, byUid, other, node]);

    expect(probe.errorsForPod(UID, { namespace: 'default', name: 'web' })).toEqual([podList, thePod, byUid]);
    expect(probe.errorsForPod(UID, null)).toEqual([podList, byUid]);
  });
});

describe('manifestPodSourceProbe', () => {
  /** A manifest source stand-in: `resync` applies the next directory contents. */
  function source(initial: Pod[]) {
    let pods = initial;
    let next = initial;
    return {
      resyncs: 0,
      setDirectory(p: Pod[]) {
        next = p;
      },
      resync() {
        this.resyncs++;
        pods = next;
        return Promise.resolve();
      },
      getPodByUID: (uid: string) => pods.find((p) => p.metadata.uid === uid),
      sourceErrors: () => [{ file: 'broken.yaml', message: 'broken.yaml: document 0: kind: required' }],
    };
  }
  const pod = (phase: 'Running' | 'Succeeded'): Pod => ({ metadata: { name: 'web', namespace: 'default', uid: UID }, spec: { containers: [] }, status: { phase } });

  it('re-reads the directory before the lookup: a manifest written since the last scan counts', async () => {
    const s = source([]);
    s.setDirectory([pod('Running')]);
    const probe = manifestPodSourceProbe(s);

    const lookup = await probe.lookupPod(UID);

    expect(s.resyncs).toBe(1);
    expect(lookup).toMatchObject({ presence: 'present', pod: { namespace: 'default', name: 'web' } });
  });

  it.each([
    { name: 'absent when no file defines it', pods: [], presence: 'absent' },
    { name: 'terminated in phase Succeeded', pods: [pod('Succeeded')], presence: 'terminated' },
  ])('reports the pod $name', async ({ pods, presence }) => {
    expect((await manifestPodSourceProbe(source(pods)).lookupPod(UID)).presence).toBe(presence);
  });

  it('counts every source error: any invalid file may define the pod', () => {
    expect(manifestPodSourceProbe(source([])).errorsForPod(UID, null)).toEqual([{ file: 'broken.yaml', message: 'broken.yaml: document 0: kind: required' }]);
  });
});
