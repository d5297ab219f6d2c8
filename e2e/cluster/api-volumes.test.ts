/**
 * Volumes whose contents come from the real API server, on agent-0: configMap, secret, projected
 * (a bound service-account token with an audience, a configMap and the downward API) and the
 * `kube-api-access-*` volume that the ServiceAccount admission plugin adds. The files match the
 * objects, the token is one the real TokenReview accepts as bound to the pod, secrets live on
 * tmpfs, and a changed ConfigMap or Secret reaches the pod's files as the kubelet's periodic
 * remount does (within the object cache's TTL and a pod resync).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE } from '../../scripts/cluster/cluster.ts';
import { waitFor } from '../../lib/clock/testing/wait-for.ts';
import { cluster, facts, mountTable, versionTag } from './cluster-context.ts';

const VERSIONS = [versionTag('kube-apiserver'), versionTag('kube-controller-manager')].join(', ');
const NS = 'api-volumes';
const POD = 'consumer';
const STEP_MS = 120_000;
/** The object cache's TTL (60 s) plus a pod resync and a reconcile, with room for a loaded machine. */
const REFRESH_MS = 150_000;

interface Pod {
  metadata: { uid: string };
  spec: { volumes: { name: string; projected?: unknown }[] };
}

const apply = (object: unknown): Promise<string> => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) });
const readVolumeFile = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8');

describe(`configMap, secret and projected volumes from the real API server on agent ${NODE} (${VERSIONS})`, () => {
  let pod: Pod;
  let volumesDir = '';
  const dirOf = (plugin: string, volume: string): string => join(volumesDir, plugin, volume);

  beforeAll(async () => {
    await cluster.waitForNodeReady(STEP_MS);
    await cluster.kubectl(['create', 'namespace', NS]);
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: NS }, data: { greeting: 'hello' } });
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: NS }, stringData: { password: 's3cret' } });
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: NS, labels: { app: 'consumer' } },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 5,
        // The kubelet (and the agent) mount only the volumes a container mounts (GetPodVolumeNames).
        containers: [
          {
            name: 'app',
            image: 'registry.invalid/app:1',
            volumeMounts: [
              { name: 'settings', mountPath: '/etc/settings' },
              { name: 'creds', mountPath: '/etc/creds' },
              { name: 'bundle', mountPath: '/etc/bundle' },
            ],
          },
        ],
        volumes: [
          { name: 'settings', configMap: { name: 'settings' } },
          { name: 'creds', secret: { secretName: 'creds' } },
          {
            name: 'bundle',
            projected: {
              sources: [
                { serviceAccountToken: { audience: 'vault', expirationSeconds: 3600, path: 'vault-token' } },
                { configMap: { name: 'settings', items: [{ key: 'greeting', path: 'config/greeting' }] } },
                { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
              ],
            },
          },
        ],
      },
    };
    // The ServiceAccount admission plugin refuses pods until the controller created `default`.
    await waitFor(async () => (await cluster.kubectlRun(['apply', '-f', '-'], { input: JSON.stringify(manifest) })).code === 0, {
      what: `pod ${NS}/${POD} admitted (needs ServiceAccount ${NS}/default)`,
      timeoutMs: STEP_MS,
      pollMs: 500,
    });
    pod = JSON.parse(await cluster.kubectl(['get', 'pod', '-n', NS, POD, '-o', 'json'])) as Pod;
    volumesDir = join(facts.agent.rootDir, 'pods', pod.metadata.uid, 'volumes');
  });

  afterAll(async () => {
    await cluster.kubectlRun(['delete', 'namespace', NS, '--wait=false']);
  });

  it('the files match the API objects; the secret and the projected volumes are tmpfs mounts', async () => {
    await waitFor(
      () => {
        try {
          return readVolumeFile(dirOf('kubernetes.io~configmap', 'settings'), 'greeting') === 'hello' && readVolumeFile(dirOf('kubernetes.io~secret', 'creds'), 'password') === 's3cret';
        } catch {
          return false;
        }
      },
      { what: `configMap and secret volumes of ${NS}/${POD} set up`, timeoutMs: STEP_MS, pollMs: 250 },
    );
    const bundle = dirOf('kubernetes.io~projected', 'bundle');
    await waitFor(() => readdirSync(bundle).includes('vault-token'), { what: `${bundle}/vault-token written`, timeoutMs: STEP_MS, pollMs: 250 });
    expect(readVolumeFile(bundle, 'config/greeting')).toBe('hello');
    expect(readVolumeFile(bundle, 'name')).toBe(POD);
    expect(readVolumeFile(bundle, 'labels')).toBe('app="consumer"');
    const tmpfs = new Set(mountTable().filter((m) => m.fsType === 'tmpfs').map((m) => m.mountPoint));
    expect(tmpfs.has(dirOf('kubernetes.io~secret', 'creds'))).toBe(true);
    expect(tmpfs.has(bundle)).toBe(true);
  });

  it('the kube-api-access volume the admission plugin added holds a token, ca.crt and namespace', async () => {
    const access = pod.spec.volumes.find((v) => v.name.startsWith('kube-api-access-') && v.projected !== undefined);
    expect(access).toBeDefined();
    const dir = dirOf('kubernetes.io~projected', access?.name ?? '');
    await waitFor(() => readdirSync(dir).includes('token'), { what: `${dir}/token written`, timeoutMs: STEP_MS, pollMs: 250 });
    expect(readVolumeFile(dir, 'namespace')).toBe(NS);
    expect(readVolumeFile(dir, 'ca.crt')).toBe(readFileSync(facts.pki.caCert, 'utf8'));
  });

  it('the projected token is one the real TokenReview accepts, bound to the pod, with its audience', async () => {
    const bundle = dirOf('kubernetes.io~projected', 'bundle');
    await waitFor(() => existsSync(join(bundle, 'vault-token')), { what: `${bundle}/vault-token written`, timeoutMs: STEP_MS, pollMs: 250 });
    const token = readVolumeFile(bundle, 'vault-token');
    const review = JSON.parse(
      await cluster.kubectl(['create', '-o', 'json', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: ['vault'] } }),
      }),
    ) as { status: { authenticated?: boolean; error?: string; audiences?: string[]; user?: { username?: string; extra?: Record<string, string[]> } } };
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(review.status.authenticated, `TokenReview: ${review.status.error ?? 'no error'}; token claims ${JSON.stringify(claims)}`).toBe(true);
    expect(review.status.audiences).toEqual(['vault']);
    expect(review.status.user?.username).toBe(`system:serviceaccount:${NS}:default`);
    expect(review.status.user?.extra?.['authentication.kubernetes.io/pod-name']).toEqual([POD]);
    expect(review.status.user?.extra?.['authentication.kubernetes.io/pod-uid']).toEqual([pod.metadata.uid]);
  });

  it('a changed ConfigMap and Secret reach the files (configMap, secret and projected volumes)', async () => {
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: NS }, data: { greeting: 'bonjour' } });
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: NS }, stringData: { password: 'rotated' } });
    const read = (): string[] => [
      readVolumeFile(dirOf('kubernetes.io~configmap', 'settings'), 'greeting'),
      readVolumeFile(dirOf('kubernetes.io~secret', 'creds'), 'password'),
      readVolumeFile(dirOf('kubernetes.io~projected', 'bundle'), 'config/greeting'),
    ];
    await waitFor(() => read().join() === 'bonjour,rotated,bonjour', { what: 'the new ConfigMap and Secret data in the pod volumes', timeoutMs: REFRESH_MS, pollMs: 500, describe: () => read().join() });
  });

  it('deleting the pod tears the volumes down (tmpfs unmounted) and the delete completes', async () => {
    await cluster.kubectl(['delete', 'pod', '-n', NS, POD, '--wait=false']);
    await waitFor(async () => (await cluster.kubectlRun(['get', 'pod', '-n', NS, POD])).stderr.includes('NotFound'), { what: `pod ${NS}/${POD} deleted`, timeoutMs: STEP_MS, pollMs: 500 });
    expect(mountTable().filter((m) => m.mountPoint.startsWith(volumesDir))).toEqual([]);
  });
});
