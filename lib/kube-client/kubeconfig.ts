/**
 * The one kubeconfig loader of the agent's API source and the dashboard's discovery.
 *
 * {@link loadKubeConfigWithOrigin} picks the source the agent's way: `--kubeconfig <path>`, else
 * `$KUBECONFIG`, else the in-cluster service account. Unlike client-node's `loadFromDefault`,
 * there is no fallback to `~/.kube/config` or `http://localhost:8080`: an agent that silently
 * talks to whatever cluster the operator's own kubeconfig selects, or to nothing, is worse than
 * one that refuses to start. (The dashboard chooses its source in its settings, with a
 * `~/.kube/config` fallback for development, and loads it with {@link loadKubeConfigFiles} or
 * {@link inClusterKubeConfig}.)
 *
 * The environment is a parameter (not read from `process.env`), so callers and tests decide
 * what counts; client-node's `loadFromCluster` reads `process.env` itself, so the in-cluster
 * configuration is built here, with client-node's rules:
 * - server `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, an IPv6 host in
 *   brackets; ports 80, 8080 and 8001 get `http://`, exactly as client-node's `loadFromCluster`;
 * - TLS is always verified in-cluster (`skipTLSVerify: false`) against the service account's
 *   `ca.crt`, and nothing here ever turns verification off implicitly. client-node 2.x refuses
 *   an `http://` server unless `skipTLSVerify` is set ("HTTP protocol is not allowed when
 *   skipTLSVerify is not set or false"), so an in-cluster configuration on one of those ports
 *   fails at its first request, as it does with `loadFromCluster`: in-cluster is TLS only.
 *   Plain-http test servers are reached through kubeconfig files that say
 *   `insecure-skip-tls-verify: true` (lib/sources/kube/testing/kubeconfig-file.ts);
 * - the token is read from the token file by client-node's `tokenFile` auth provider, which
 *   re-reads it every 60 s, so projected (rotating) tokens keep working; a missing token file
 *   is a {@link KubeConfigError} at load time, not a 401 on every request.
 */
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { isIPv6 } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClientNode } from './client-node.ts';

export const defaultServiceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** No usable client configuration: no kubeconfig, an unreadable one, or no in-cluster setup. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

export function isKubeConfigError(err: unknown): err is KubeConfigError {
  return err instanceof KubeConfigError;
}

/** The environment the loader reads (`KUBECONFIG`, `KUBERNETES_SERVICE_HOST` and `_PORT`). */
export type KubeConfigEnv = Readonly<Record<string, string | undefined>>;

export interface LoadKubeConfigOptions {
  /** client-node, whose `KubeConfig` is built. */
  clientNode: Pick<ClientNode, 'KubeConfig'>;
  /** The `--kubeconfig` flag; wins over everything else. */
  kubeconfig?: string | undefined;
  /** The environment to read `KUBECONFIG`, `KUBERNETES_SERVICE_HOST` and `_PORT` from. */
  env: KubeConfigEnv;
  /** The service account directory of an in-cluster pod; for tests. */
  serviceAccountDir?: string;
}

/** Where the configuration came from, for logs. */
export type KubeConfigOrigin = { kind: 'file'; paths: string[] } | { kind: 'in-cluster'; server: string };

/**
 * Loads the client configuration. Throws {@link KubeConfigError} when no source applies, a
 * kubeconfig file cannot be read or parsed, or it selects no cluster.
 */
export function loadKubeConfig(options: LoadKubeConfigOptions): KubeConfig {
  return loadKubeConfigWithOrigin(options).kubeConfig;
}

export function loadKubeConfigWithOrigin(options: LoadKubeConfigOptions): { kubeConfig: KubeConfig; origin: KubeConfigOrigin } {
  const { clientNode } = options;
  const explicit = options.kubeconfig?.trim();
  if (explicit !== undefined && explicit !== '') return { kubeConfig: loadKubeConfigFiles(clientNode, [explicit]), origin: { kind: 'file', paths: [explicit] } };
  const fromEnv = kubeconfigPaths(options.env);
  if (fromEnv.length > 0) return { kubeConfig: loadKubeConfigFiles(clientNode, fromEnv), origin: { kind: 'file', paths: fromEnv } };
  let kubeConfig: KubeConfig;
  try {
    kubeConfig = inClusterKubeConfig(clientNode, options.env, options.serviceAccountDir ?? defaultServiceAccountDir);
  } catch (err) {
    throw new KubeConfigError(
      'no Kubernetes API configuration: pass --kubeconfig, set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST/PORT and a service account token)',
      { cause: err },
    );
  }
  return { kubeConfig, origin: { kind: 'in-cluster', server: kubeConfig.getCurrentCluster()?.server ?? '' } };
}

/** The paths of `KUBECONFIG` (a `:`-separated list; empty entries skipped). */
export function kubeconfigPaths(env: KubeConfigEnv): string[] {
  return (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p.trim() !== '');
}

/**
 * The first file, with later files merged in as `KUBECONFIG` lists are (the first one's context
 * wins). Throws {@link KubeConfigError} for a file that cannot be loaded, or when the result
 * selects no cluster.
 */
export function loadKubeConfigFiles(clientNode: Pick<ClientNode, 'KubeConfig'>, paths: readonly string[]): KubeConfig {
  const kc = new clientNode.KubeConfig();
  paths.forEach((path, i) => {
    try {
      if (i === 0) {
        kc.loadFromFile(path);
      } else {
        const extra = new clientNode.KubeConfig();
        extra.loadFromFile(path);
        kc.mergeConfig(extra, true);
      }
    } catch (err) {
      throw new KubeConfigError(`kubeconfig ${path} cannot be loaded: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  });
  if (kc.getCurrentCluster() === null) {
    throw new KubeConfigError(`kubeconfig ${paths.join(delimiter)} selects no cluster (current-context ${JSON.stringify(kc.getCurrentContext())})`);
  }
  return kc;
}

/**
 * The in-cluster configuration (see the module comment). Throws {@link KubeConfigError} unless
 * `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT` and the token file are all there.
 */
export function inClusterKubeConfig(clientNode: Pick<ClientNode, 'KubeConfig'>, env: KubeConfigEnv, serviceAccountDir: string = defaultServiceAccountDir): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const tokenFile = join(serviceAccountDir, 'token');
  if (host === '' || port === '') throw new KubeConfigError('not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set');
  if (!existsSync(tokenFile)) throw new KubeConfigError(`no service account token at ${tokenFile}`);
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const server = `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(serviceAccountDir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  const kc = new clientNode.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'inCluster', server, caFile: join(serviceAccountDir, 'ca.crt'), skipTLSVerify: false }],
    users: [{ name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile } } }],
    contexts: [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', ...(namespace === undefined ? {} : { namespace }) }],
    currentContext: 'inClusterContext',
  });
  return kc;
}
