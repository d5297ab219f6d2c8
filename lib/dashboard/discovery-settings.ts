/**
 * The settings of agent discovery through the Kubernetes API (`VOLUMESCOPE_DISCOVERY=kubernetes`,
 * see discovery.ts), parsed and checked from the environment. Server-only; loads no Kubernetes
 * client.
 *
 * - `VOLUMESCOPE_DISCOVERY_NAMESPACE`: where the agent pods run; default the namespace of the
 *   dashboard's own service account (`…/serviceaccount/namespace`), else `volumescope`.
 * - `VOLUMESCOPE_DISCOVERY_SELECTOR`: their label selector; default
 *   `app.kubernetes.io/name=volumescope-agent`.
 * - `VOLUMESCOPE_DISCOVERY_TOKEN_FILE`: the bearer token sent to every agent; default the
 *   service account token. It is read on every request (agent-proxy), since projected tokens
 *   rotate.
 * - `VOLUMESCOPE_AGENT_PORT`: the agent port when the pod names no container port `api`;
 *   default 7070.
 * - The API itself: `KUBECONFIG` when set, else the in-cluster service account
 *   (`KUBERNETES_SERVICE_HOST`), else `~/.kube/config`. Unlike client-node's `loadFromDefault`
 *   there is no fallback to `http://localhost:8080`: discovery that silently talks to nothing
 *   would look like "no agents". The chosen source is loaded by lib/kube-client/kubeconfig.ts,
 *   the agent's loader.
 *
 * Every malformed value is a {@link DiscoveryConfigError} naming the variable to fix.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultServiceAccountDir, kubeconfigPaths } from '../kube-client/kubeconfig.ts';

/** `kubernetes` turns discovery on; empty or unset leaves it off. */
export const DISCOVERY_ENV = 'VOLUMESCOPE_DISCOVERY';
export const DISCOVERY_NAMESPACE_ENV = 'VOLUMESCOPE_DISCOVERY_NAMESPACE';
export const DISCOVERY_SELECTOR_ENV = 'VOLUMESCOPE_DISCOVERY_SELECTOR';
export const DISCOVERY_TOKEN_FILE_ENV = 'VOLUMESCOPE_DISCOVERY_TOKEN_FILE';
export const AGENT_PORT_ENV = 'VOLUMESCOPE_AGENT_PORT';
/** `https` when the agents serve TLS (`--tls-cert-file`); default `http`. */
export const AGENT_SCHEME_ENV = 'VOLUMESCOPE_AGENT_SCHEME';

export const DEFAULT_DISCOVERY_SELECTOR = 'app.kubernetes.io/name=volumescope-agent';
export const DEFAULT_DISCOVERY_NAMESPACE = 'volumescope';
export const DEFAULT_AGENT_PORT = 7070;
/** Where Kubernetes mounts a pod's service account. */
export const SERVICE_ACCOUNT_DIR = defaultServiceAccountDir;

/** A discovery setting is malformed or missing; names the variable at fault. */
export class DiscoveryConfigError extends Error {
  override readonly name = 'DiscoveryConfigError';

  constructor(
    /** The environment variable to fix. */
    readonly variable: string,
    /** What is wrong with it (the message without the variable). */
    readonly detail: string,
  ) {
    super(`${variable}: ${detail}`);
  }
}

/** True for a {@link DiscoveryConfigError}. */
export function isDiscoveryConfigError(err: unknown): err is DiscoveryConfigError {
  return err instanceof DiscoveryConfigError;
}

/** Where the Kubernetes API configuration comes from. */
export type KubeApiSource =
  | { readonly kind: 'kubeconfig'; readonly files: readonly string[]; readonly variable: string }
  | { readonly kind: 'in-cluster'; readonly variable: string };

/** Everything discovery needs, parsed from the environment. */
export interface DiscoverySettings {
  readonly namespace: string;
  readonly selector: string;
  /** Absolute path of the token file sent to agents. */
  readonly tokenFile: string;
  /** The port of agents whose pod names no `api` container port. */
  readonly defaultPort: number;
  /** How agents are reached (`VOLUMESCOPE_AGENT_SCHEME`); absent: `http`. */
  readonly scheme?: 'http' | 'https';
  readonly api: KubeApiSource;
}

/** The environment as discovery reads it. */
export type DiscoveryEnv = Readonly<Record<string, string | undefined>>;

/** How settings reach the file system (injected by tests). */
export interface DiscoveryFiles {
  readonly cwd: string;
  /** The text of a file, or `null` when it does not exist or cannot be read. */
  readonly readText: (path: string) => string | null;
  readonly exists: (path: string) => boolean;
  readonly homeDir: string;
  readonly serviceAccountDir: string;
}

/** The process's file system. */
export function processDiscoveryFiles(): DiscoveryFiles {
  return {
    cwd: process.cwd(),
    readText: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return null;
      }
    },
    exists: existsSync,
    homeDir: homedir(),
    serviceAccountDir: SERVICE_ACCOUNT_DIR,
  };
}

/** True when `VOLUMESCOPE_DISCOVERY=kubernetes`; throws for any other non-empty value. */
export function discoveryEnabled(env: DiscoveryEnv): boolean {
  const value = env[DISCOVERY_ENV]?.trim() ?? '';
  if (value === '') return false;
  if (value === 'kubernetes') return true;
  throw new DiscoveryConfigError(DISCOVERY_ENV, `${JSON.stringify(value)} is not a discovery mode (the only one is "kubernetes"; leave it empty for VOLUMESCOPE_AGENTS)`);
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The settings of `env` (see the module comment). Throws a {@link DiscoveryConfigError} for a
 * malformed value, or when no Kubernetes API configuration can be found.
 */
export function parseDiscoverySettings(env: DiscoveryEnv, files: DiscoveryFiles): DiscoverySettings {
  let namespace = env[DISCOVERY_NAMESPACE_ENV]?.trim() ?? '';
  if (namespace === '') namespace = files.readText(join(files.serviceAccountDir, 'namespace'))?.trim() ?? '';
  if (namespace === '') namespace = DEFAULT_DISCOVERY_NAMESPACE;
  if (!DNS_LABEL.test(namespace)) {
    throw new DiscoveryConfigError(DISCOVERY_NAMESPACE_ENV, `${JSON.stringify(namespace)} is not a namespace name (lowercase letters, digits and '-', at most 63)`);
  }
  const selector = env[DISCOVERY_SELECTOR_ENV]?.trim() || DEFAULT_DISCOVERY_SELECTOR;
  if (/[\r\n]/.test(selector)) throw new DiscoveryConfigError(DISCOVERY_SELECTOR_ENV, 'must be one line');
  const tokenFile = resolve(files.cwd, env[DISCOVERY_TOKEN_FILE_ENV]?.trim() || join(files.serviceAccountDir, 'token'));
  const portText = env[AGENT_PORT_ENV]?.trim() ?? '';
  let defaultPort = DEFAULT_AGENT_PORT;
  if (portText !== '') {
    defaultPort = Number(portText);
    if (!/^[0-9]{1,5}$/.test(portText) || defaultPort < 1 || defaultPort > 65_535) {
      throw new DiscoveryConfigError(AGENT_PORT_ENV, `${JSON.stringify(portText)} is not a port (1-65535)`);
    }
  }
  const schemeText = env[AGENT_SCHEME_ENV]?.trim() ?? '';
  if (schemeText !== '' && schemeText !== 'http' && schemeText !== 'https') {
    throw new DiscoveryConfigError(AGENT_SCHEME_ENV, `${JSON.stringify(schemeText)} is not http or https`);
  }
  return { namespace, selector, tokenFile, defaultPort, ...(schemeText === 'https' ? { scheme: 'https' as const } : {}), api: kubeApiSource(env, files) };
}

/** Where the Kubernetes API is: `KUBECONFIG`, the pod's service account, else `~/.kube/config`; throws DiscoveryConfigError when none. */
export function kubeApiSource(env: DiscoveryEnv, files: DiscoveryFiles): KubeApiSource {
  const listed = kubeconfigPaths(env).map((p) => p.trim());
  if (listed.length > 0) return { kind: 'kubeconfig', files: listed.map((p) => resolve(files.cwd, p)), variable: 'KUBECONFIG' };
  if ((env.KUBERNETES_SERVICE_HOST ?? '') !== '' && (env.KUBERNETES_SERVICE_PORT ?? '') !== '') {
    return { kind: 'in-cluster', variable: 'KUBERNETES_SERVICE_HOST' };
  }
  const home = join(files.homeDir, '.kube', 'config');
  if (files.exists(home)) return { kind: 'kubeconfig', files: [home], variable: 'KUBECONFIG' };
  throw new DiscoveryConfigError(
    DISCOVERY_ENV,
    'discovery needs the Kubernetes API: run the dashboard in a pod (its service account), or set KUBECONFIG',
  );
}
