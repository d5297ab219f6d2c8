import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as clientNode from '@kubernetes/client-node';
import { writeKubeconfigFile } from '../sources/kube/testing/kubeconfig-file.ts';
import { inClusterKubeConfig, isKubeConfigError, loadKubeConfig as load, loadKubeConfigWithOrigin as loadWithOrigin } from './kubeconfig.ts';
import type { LoadKubeConfigOptions } from './kubeconfig.ts';

type Options = Omit<LoadKubeConfigOptions, 'clientNode'>;
const loadKubeConfig = (options: Options) => load({ clientNode, ...options });
const loadKubeConfigWithOrigin = (options: Options) => loadWithOrigin({ clientNode, ...options });

let dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  dirs = [];
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'load-kube-config-'));
  dirs.push(dir);
  return dir;
}

/** A service account directory as a pod has it. */
async function serviceAccountDir(options: { namespace?: string } = {}): Promise<string> {
  const dir = join(await tempDir(), 'serviceaccount');
  await mkdir(dir);
  await writeFile(join(dir, 'token'), 'sa-token');
  await writeFile(join(dir, 'ca.crt'), 'not a real certificate');
  if (options.namespace !== undefined) await writeFile(join(dir, 'namespace'), options.namespace);
  return dir;
}

describe('loadKubeConfig', () => {
  it('prefers the --kubeconfig path over KUBECONFIG and the in-cluster setup', async () => {
    const dir = await tempDir();
    const flag = await writeKubeconfigFile(join(dir, 'flag'), { server: 'http://127.0.0.1:1001' });
    const env = await writeKubeconfigFile(join(dir, 'env'), { server: 'http://127.0.0.1:1002' });
    const sa = await serviceAccountDir();

    const kc = loadKubeConfig({ kubeconfig: flag, env: { KUBECONFIG: env, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: sa });

    expect(kc.getCurrentCluster()?.server).toBe('http://127.0.0.1:1001');
    expect(kc.getCurrentCluster()?.skipTLSVerify).toBe(true);
    expect(kc.getCurrentUser()?.token).toBe('test-token');
  });

  it('reads KUBECONFIG, merging a list of files with the first file choosing the context', async () => {
    const dir = await tempDir();
    const first = join(dir, 'first');
    const second = join(dir, 'second');
    await writeFile(first, 'apiVersion: v1\nkind: Config\nclusters: [{name: one, cluster: {server: "https://one:6443"}}]\nusers: [{name: u1, user: {token: t1}}]\ncontexts: [{name: c1, context: {cluster: one, user: u1}}]\ncurrent-context: c1\n');
    await writeFile(second, 'apiVersion: v1\nkind: Config\nclusters: [{name: two, cluster: {server: "https://two:6443"}}]\nusers: [{name: u2, user: {token: t2}}]\ncontexts: [{name: c2, context: {cluster: two, user: u2}}]\ncurrent-context: c2\n');

    const { kubeConfig, origin } = loadKubeConfigWithOrigin({ env: { KUBECONFIG: `${first}${delimiter}${second}` } });

    expect(origin).toEqual({ kind: 'file', paths: [first, second] });
    expect(kubeConfig.getCurrentCluster()?.server).toBe('https://one:6443');
    expect(kubeConfig.getContexts().map((c) => c.name)).toEqual(['c1', 'c2']);
  });

  it('builds the in-cluster configuration from the given environment and service account', async () => {
    const sa = await serviceAccountDir({ namespace: 'volumescope' });

    const { kubeConfig, origin } = loadKubeConfigWithOrigin({ env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: sa });

    expect(origin).toEqual({ kind: 'in-cluster', server: 'https://10.96.0.1:443' });
    expect(kubeConfig.getCurrentCluster()).toMatchObject({ server: 'https://10.96.0.1:443', caFile: join(sa, 'ca.crt'), skipTLSVerify: false });
    expect(kubeConfig.getCurrentUser()?.authProvider).toEqual({ name: 'tokenFile', config: { tokenFile: join(sa, 'token') } });
    expect(kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace).toBe('volumescope');
  });

  it.each([
    { host: 'fd00::1', port: '443', server: 'https://[fd00::1]:443' },
    { host: 'apiserver', port: '8080', server: 'http://apiserver:8080' },
  ])('uses $server for host $host and port $port', async ({ host, port, server }) => {
    const sa = await serviceAccountDir();
    expect(loadKubeConfig({ env: { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port }, serviceAccountDir: sa }).getCurrentCluster()?.server).toBe(server);
  });

  it('refuses to guess when no configuration applies', async () => {
    const sa = await serviceAccountDir();
    expect(() => loadKubeConfig({ env: {}, serviceAccountDir: sa })).toThrow(/pass --kubeconfig, set KUBECONFIG, or run in a pod/);
    expect(() => loadKubeConfig({ env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: join(sa, 'missing') })).toThrow(
      expect.toSatisfy(isKubeConfigError) as Error,
    );
  });

  it('reports an unreadable kubeconfig and one that selects no cluster', async () => {
    const dir = await tempDir();
    const missing = join(dir, 'missing');
    expect(() => loadKubeConfig({ kubeconfig: missing, env: {} })).toThrow(`kubeconfig ${missing} cannot be loaded`);
    const empty = join(dir, 'empty');
    await writeFile(empty, 'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n');
    expect(() => loadKubeConfig({ kubeconfig: empty, env: {} })).toThrow('selects no cluster');
  });

  it('inClusterKubeConfig says what is missing; the agent keeps its one message naming every way', async () => {
    const sa = await serviceAccountDir();
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };

    expect(() => inClusterKubeConfig(clientNode, {}, sa)).toThrow('not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set');
    expect(() => inClusterKubeConfig(clientNode, env, join(sa, 'missing'))).toThrow(`no service account token at ${join(sa, 'missing', 'token')}`);
    expect(() => loadKubeConfig({ env, serviceAccountDir: join(sa, 'missing') })).toThrow(
      'no Kubernetes API configuration: pass --kubeconfig, set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST/PORT and a service account token)',
    );
  });
});
