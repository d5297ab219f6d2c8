/**
 * The process wiring of the attachment view: one {@link AttachmentInformers} per server process
 * (kept on `globalThis`, as Next may evaluate this module more than once), on the Kubernetes API
 * of `KUBECONFIG`, the pod's service account, or `~/.kube/config` (the same lookup as agent
 * discovery). client-node is loaded on first use only. Server-only.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { realClock } from '../../clock/clock.ts';
import { describeApiError } from '../../kube-client/api-errors.ts';
import { loadClientNode, type ClientNode } from '../../kube-client/client-node.ts';
import { loadDiscoveryKubeConfig } from '../discovery.ts';
import { isDiscoveryConfigError, kubeApiSource, processDiscoveryFiles, type DiscoveryEnv, type DiscoveryFiles } from '../discovery-settings.ts';
import { AttachmentInformers } from './attachment-informers.ts';

/** The attachment view has no Kubernetes API to read. */
export class AttachmentsConfigError extends Error {
  override readonly name = 'AttachmentsConfigError';
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(message);
    this.variable = variable;
  }
}

export function isAttachmentsConfigError(err: unknown): err is AttachmentsConfigError {
  return err instanceof AttachmentsConfigError;
}

const WATCHED_ENV = ['KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'] as const;

interface AttachmentGlobals {
  __volumescopeAttachments?: { key: string; api: Promise<KubeApi>; informers: Promise<AttachmentInformers> };
}

/** The client and API configuration the attachment view (and its out-of-service action) use. */
export interface KubeApi {
  readonly k8s: ClientNode;
  readonly kubeConfig: KubeConfig;
}

async function loadKubeApi(env: DiscoveryEnv, files: DiscoveryFiles): Promise<KubeApi> {
  const k8s = await loadClientNode();
  try {
    const source = kubeApiSource(env, files);
    return { k8s, kubeConfig: loadDiscoveryKubeConfig(k8s, source, env, files.serviceAccountDir) };
  } catch (err) {
    if (isDiscoveryConfigError(err)) {
      throw new AttachmentsConfigError(
        err.variable === 'VOLUMESCOPE_DISCOVERY' ? 'KUBECONFIG' : err.variable,
        `the attachment view reads the Kubernetes API: run the dashboard in a pod (its service account), or set KUBECONFIG (${err.detail})`,
      );
    }
    throw new AttachmentsConfigError('KUBECONFIG', describeApiError(err).message);
  }
}

async function create(api: Promise<KubeApi>): Promise<AttachmentInformers> {
  const { k8s, kubeConfig } = await api;
  return new AttachmentInformers({ clientNode: k8s, kubeConfig, clock: realClock });
}

/**
 * The informer set of this process for `env`; a change of the variables replaces it. Rejects
 * with an {@link AttachmentsConfigError} when no API configuration can be loaded.
 */
export function serverAttachmentInformers(env: DiscoveryEnv = process.env, files: () => DiscoveryFiles = processDiscoveryFiles): Promise<AttachmentInformers> {
  return processState(env, files).informers;
}

/** The Kubernetes API of the attachment view (the same rules as {@link serverAttachmentInformers}). */
export function serverKubeApi(env: DiscoveryEnv = process.env, files: () => DiscoveryFiles = processDiscoveryFiles): Promise<KubeApi> {
  return processState(env, files).api;
}

function processState(env: DiscoveryEnv, files: () => DiscoveryFiles): NonNullable<AttachmentGlobals['__volumescopeAttachments']> {
  const key = WATCHED_ENV.map((name) => env[name] ?? '').join('\u0000');
  const g = globalThis as AttachmentGlobals;
  const current = g.__volumescopeAttachments;
  if (current?.key === key) return current;
  if (current !== undefined) void current.informers.then((i) => i.stop()).catch(() => undefined);
  const api = loadKubeApi(env, files());
  api.catch(() => undefined);
  const informers = create(api);
  const state = { key, api, informers };
  g.__volumescopeAttachments = state;
  // A configuration error is answered per request; forget it so a fixed environment is retried.
  informers.catch(() => {
    if (g.__volumescopeAttachments?.informers === informers) g.__volumescopeAttachments = undefined;
  });
  return state;
}

/** How long a request waits for the first lists before answering without them. */
export const ATTACHMENTS_FIRST_LIST_WAIT_MS = 5_000;
