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
 * Watches are not sent through here: client-node's `Watch` streams with fetch.
 */
import {
  createConfiguration,
  ResponseContext,
  ServerConfiguration,
  setHeaderMiddleware,
  wrapHttpLibrary,
  type KubeConfig,
  type PromiseHttpLibrary,
  type RequestContext,
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
      authMethods: { default: kc },
      middleware: [setHeaderMiddleware('User-Agent', USER_AGENT)],
      httpApi: wrapHttpLibrary(undiciRequestLibrary),
    }),
  );
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
