/**
 * Where the API source finds its cluster: `--kubeconfig <path>`, else `$KUBECONFIG`, else the
 * in-cluster service account. Unlike client-node's `loadFromDefault`, there is no fallback to
 * `~/.kube/config` or `http://localhost:8080`: an agent that silently talks to whatever cluster
 * the operator's own kubeconfig selects, or to nothing, is worse than one that refuses to start.
 *
 * The environment is a parameter (not read from `process.env`), so callers and tests decide
 * what counts; client-node's `loadFromCluster` reads `process.env` itself, so the in-cluster
 * configuration is built here with the same rules:
 * - server `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT` (http for ports 80,
 *   8080 and 8001, an IPv6 host in brackets), the service account's `ca.crt`;
 * - the token is read from the token file by client-node's `tokenFile` auth provider, which
 *   re-reads it every 60 s, so projected (rotating) tokens keep working.
 */
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { isIPv6 } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from './errors.ts';

export const defaultServiceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadKubeConfigOptions {
  /** The `--kubeconfig` flag; wins over everything else. */
  kubeconfig?: string | undefined;
  /** The environment to read `KUBECONFIG`, `KUBERNETES_SERVICE_HOST` and `_PORT` from. */
  env: Readonly<Record<string, string | undefined>>;
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
  const explicit = options.kubeconfig?.trim();
  if (explicit !== undefined && explicit !== '') return { kubeConfig: fromFiles([explicit]), origin: { kind: 'file', paths: [explicit] } };
  const fromEnv = (options.env.KUBECONFIG ?? '').split(delimiter).filter((p) => p.trim() !== '');
  if (fromEnv.length > 0) return { kubeConfig: fromFiles(fromEnv), origin: { kind: 'file', paths: fromEnv } };
  const kubeConfig = inCluster(options.env, options.serviceAccountDir ?? defaultServiceAccountDir);
  return { kubeConfig, origin: { kind: 'in-cluster', server: kubeConfig.getCurrentCluster()?.server ?? '' } };
}

/** The first file, with later files merged in as `KUBECONFIG` lists are (first one's context wins). */
function fromFiles(paths: string[]): KubeConfig {
  const kc = new KubeConfig();
  paths.forEach((path, i) => {
    try {
      if (i === 0) {
        kc.loadFromFile(path);
      } else {
        const extra = new KubeConfig();
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

function inCluster(env: LoadKubeConfigOptions['env'], serviceAccountDir: string): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const tokenFile = join(serviceAccountDir, 'token');
  if (host === '' || port === '' || !existsSync(tokenFile)) {
    throw new KubeConfigError(
      'no Kubernetes API configuration: pass --kubeconfig, set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST/PORT and a service account token)',
    );
  }
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const server = `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(serviceAccountDir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'inCluster', server, caFile: join(serviceAccountDir, 'ca.crt'), skipTLSVerify: false }],
    users: [{ name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile } } }],
    contexts: [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', ...(namespace === undefined ? {} : { namespace }) }],
    currentContext: 'inClusterContext',
  });
  return kc;
}
