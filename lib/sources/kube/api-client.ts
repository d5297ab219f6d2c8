/**
 * The API clients of the agent: `KubeConfig.makeApiClient` with one difference, the HTTP library.
 * client-node sends its requests with undici's `fetch` and reads each response body through a web
 * ReadableStream; this library sends them with undici's `request` on the same dispatcher (the
 * KubeConfig's TLS and proxy settings) and reads the body as a Node stream.
 *
 * Why: a web stream hands its chunks over one at a time, and each read waited for a turn of the
 * event loop. At a restart the loop is busy (reconstruction, the CSI driver's registration, the
 * agent's own API), and reading the first LIST of 200 pods (564 KB, 42 reads) took about 350 ms
 * after undici had received the whole body: the pods reached the volume manager last of all.
 * Measured with `undici:request:*` diagnostics channels in a `bench:cluster` restart.
 *
 * What stays as client-node does it: the URL, method, headers (its User-Agent included), body and
 * abort signal of each request, the authentication (`applySecurityAuthentication` on the request
 * context, which also chooses the dispatcher), and the response handling of the generated code
 * (status codes, error bodies, deserialisation), which receives the same ResponseContext. What
 * differs: no `Accept-Encoding` is added (fetch asks for gzip and decompresses; the API server
 * then sends plain JSON), and redirects are not followed (the API server sends none to its clients).
 * Watches are not sent through here: client-node's `Watch` streams with fetch (on the shared
 * dispatcher below once {@link shareConnections} was called for the KubeConfig).
 *
 * Connections: client-node makes a new undici Agent for every request (its
 * `applySecurityAuthentication` builds the dispatcher anew each time), so every GET, PATCH and
 * lease renewal opened a new connection and made a TLS handshake of its own: about 40 ms of the
 * main thread at a restart (a `bench:cluster` CPU profile), and the first GET of a config map
 * waited for its own handshake. Here the API clients made from one KubeConfig share one
 * dispatcher, as client-go shares one transport per configuration: the first request's, kept
 * while the TLS material (CA, client certificate and key, read again for every request as
 * client-node does, so rotated files are picked up) and the server, proxy and TLS settings stay
 * the same; when they change, the next request gets client-node's new dispatcher and the old one
 * is closed once its requests are done.
 */
import {
  bufferFromFileOrString,
  createConfiguration,
  ResponseContext,
  ServerConfiguration,
  setHeaderMiddleware,
  wrapHttpLibrary,
  type KubeConfig,
  type PromiseHttpLibrary,
  type RequestContext,
  type SecurityAuthentication,
} from '@kubernetes/client-node';
import clientNodePackage from '@kubernetes/client-node/package.json' with { type: 'json' };
import { request, type Dispatcher } from 'undici';

/** client-node's own User-Agent (its config.js `getUserAgent`), so that audit logs read the same. */
const USER_AGENT = `kubernetes-client-javascript/${clientNodePackage.version}`;

/** A generated API class of client-node (`CoreV1Api`, `StorageV1Api`, …). */
export type ApiClientClass<T> = new (configuration: ReturnType<typeof createConfiguration>) => T;

/** `kc.makeApiClient(apiClass)`, with the HTTP library of this module. Throws without a current cluster, as client-node. */
export function makeApiClient<T>(kc: KubeConfig, apiClass: ApiClientClass<T>): T {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('No active cluster!');
  return new apiClass(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: sharedConnections(kc) },
      middleware: [setHeaderMiddleware('User-Agent', USER_AGENT)],
      httpApi: wrapHttpLibrary(undiciRequestLibrary),
    }),
  );
}

const authByKubeConfig = new WeakMap<KubeConfig, SharedDispatcherAuthentication>();
const sharing = new WeakSet<KubeConfig>();

/**
 * Makes everything of client-node that authenticates through `kc` use its shared dispatcher, the
 * API clients' one: client-node's `Watch` (the informers' watches) calls the KubeConfig's
 * `applySecurityAuthentication` and sends on the dispatcher it sets, one new connection per watch
 * otherwise. Over HTTP/2 (what undici and the API server agree on) the watches, lists and GETs
 * are then streams of one connection, as client-go's are. Replaces the method on this KubeConfig
 * object; idempotent.
 */
export function shareConnections(kc: KubeConfig): void {
  if (sharing.has(kc)) return;
  const auth = sharedConnections(kc);
  sharing.add(kc);
  kc.applySecurityAuthentication = (context: RequestContext) => auth.applySecurityAuthentication(context);
}

/** The authentication of every API client made from `kc` (one shared dispatcher). */
function sharedConnections(kc: KubeConfig): SharedDispatcherAuthentication {
  let auth = authByKubeConfig.get(kc);
  if (auth === undefined) {
    auth = new SharedDispatcherAuthentication(kc);
    authByKubeConfig.set(kc, auth);
  }
  return auth;
}

/**
 * The KubeConfig's authentication (headers, TLS), with its dispatcher reused while the material it
 * was made from is unchanged (see the file comment). A dispatcher client-node made and this class
 * drops has not connected: it holds nothing to close.
 */
class SharedDispatcherAuthentication implements SecurityAuthentication {
  private shared: { material: DispatcherMaterial; dispatcher: Dispatcher } | undefined;
  /** The KubeConfig's own method, kept before {@link shareConnections} replaces it. */
  private readonly kubeConfigAuthentication: (context: RequestContext) => Promise<void>;

  constructor(private readonly kc: KubeConfig) {
    this.kubeConfigAuthentication = kc.applySecurityAuthentication.bind(kc);
  }

  getName(): string {
    return this.kc.getName();
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.kubeConfigAuthentication(context);
    const made = context.getDispatcher();
    // None: plain HTTP without TLS settings, sent on undici's global dispatcher (which pools).
    // A credential plugin (exec, auth provider) may hand out a client certificate of its own,
    // which the material below would not see: such a user keeps client-node's dispatcher per request.
    const user = this.kc.getCurrentUser();
    if (made === undefined || user?.exec !== undefined || user?.authProvider !== undefined) return;
    const material = dispatcherMaterial(this.kc);
    if (this.shared === undefined || !sameMaterial(this.shared.material, material)) {
      const replaced = this.shared?.dispatcher;
      this.shared = { material, dispatcher: made };
      // close() lets the requests already sent on it finish; nothing waits for it.
      replaced?.close().catch(() => undefined);
    }
    context.setDispatcher(this.shared.dispatcher);
  }
}

/** What client-node builds a dispatcher from: the current cluster's and user's connection settings. */
interface DispatcherMaterial {
  readonly settings: string;
  readonly ca: Buffer | null;
  readonly cert: Buffer | null;
  readonly key: Buffer | null;
}

function dispatcherMaterial(kc: KubeConfig): DispatcherMaterial {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  return {
    settings: JSON.stringify([cluster?.name, cluster?.server, cluster?.proxyUrl, cluster?.skipTLSVerify, cluster?.tlsServerName, user?.name]),
    ca: bufferFromFileOrString(cluster?.caFile, cluster?.caData),
    cert: bufferFromFileOrString(user?.certFile, user?.certData),
    key: bufferFromFileOrString(user?.keyFile, user?.keyData),
  };
}

function sameMaterial(a: DispatcherMaterial, b: DispatcherMaterial): boolean {
  const same = (x: Buffer | null, y: Buffer | null) => (x === null || y === null ? x === y : x.equals(y));
  return a.settings === b.settings && same(a.ca, b.ca) && same(a.cert, b.cert) && same(a.key, b.key);
}

const undiciRequestLibrary: PromiseHttpLibrary = {
  async send(context: RequestContext): Promise<ResponseContext> {
    const body = context.getBody();
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) {
      // FormData: client-node sends it only for multipart uploads, which the agent never makes.
      throw new TypeError(`${context.getHttpMethod()} ${context.getUrl()}: a request body of this kind is not supported by the agent's HTTP library`);
    }
    const dispatcher = context.getDispatcher();
    const response = await request(context.getUrl(), {
      method: context.getHttpMethod() as Dispatcher.HttpMethod,
      headers: context.getHeaders(),
      ...(body === undefined ? {} : { body }),
      ...(context.getSignal() === undefined ? {} : { signal: context.getSignal() }),
      ...(dispatcher === undefined ? {} : { dispatcher }),
    });
    const bytes = Buffer.from(await response.body.arrayBuffer());
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    return new ResponseContext(response.statusCode, headers, {
      text: () => Promise.resolve(bytes.toString('utf8')),
      binary: () => Promise.resolve(bytes),
      stream: () => new Blob([bytes]).stream(),
    });
  },
};
