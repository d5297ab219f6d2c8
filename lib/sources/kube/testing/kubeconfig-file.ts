/**
 * Test support: client configurations pointing at a {@link FakeApiServer}. The fake serves plain
 * http, which client-node only accepts with `insecure-skip-tls-verify: true` (otherwise every
 * request fails with "HTTP protocol is not allowed when skipTLSVerify is not set or false").
 */
import { writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

export interface FakeClusterAccess {
  /** The server URL, e.g. `FakeApiServer.url`. */
  server: string;
  /** The bearer token the client sends; default `test-token`. */
  token?: string;
  /** The context's default namespace. */
  namespace?: string;
}

const clusterName = 'fake';
const userName = 'fake-user';
const contextName = 'fake';

/** The kubeconfig YAML for `access`: one cluster, one user with a bearer token, one context. */
export function kubeconfigYaml(access: FakeClusterAccess): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: clusterName, cluster: { server: access.server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: userName, user: { token: access.token ?? 'test-token' } }],
    contexts: [
      { name: contextName, context: { cluster: clusterName, user: userName, ...(access.namespace === undefined ? {} : { namespace: access.namespace }) } },
    ],
    'current-context': contextName,
  });
}

/** Writes {@link kubeconfigYaml} to `path` (mode 0600, as kubeconfigs hold credentials). */
export async function writeKubeconfigFile(path: string, access: FakeClusterAccess): Promise<string> {
  await writeFile(path, kubeconfigYaml(access), { mode: 0o600 });
  return path;
}

/** The same configuration as an in-memory `KubeConfig`, without a file. */
export function fakeKubeConfig(access: FakeClusterAccess): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(access));
  return kc;
}
