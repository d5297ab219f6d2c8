/**
 * Test support: a Kubernetes-protocol API server over real HTTP (node:http on 127.0.0.1, an
 * ephemeral port) that the real `@kubernetes/client-node` talks to. Nothing of the client is
 * mocked: tests point a kubeconfig at {@link FakeApiServer.url} (see kubeconfig-file.ts).
 *
 * What it serves (for the kinds in `fakeResourceTypes`: pods, nodes, persistentvolumes,
 * persistentvolumeclaims, configmaps, secrets, events, namespaces, storage.k8s.io csidrivers,
 * csinodes and volumeattachments, coordination.k8s.io leases):
 * - GET of one object; LIST with `fieldSelector` (as the real server: `metadata.name`,
 *   `metadata.namespace`, plus per-kind fields such as pods' `spec.nodeName`) and
 *   `labelSelector`, answering `metadata.resourceVersion`; list items carry no kind/apiVersion,
 *   as on a real server. `limit`/`continue` are ignored (everything comes in one page).
 * - WATCH (`?watch=true`): headers are flushed at once, then newline-delimited JSON events.
 *   `resourceVersion` R replays every write after R, then streams live; "" or "0" starts with
 *   ADDED events for the current objects. A watch from a compacted resourceVersion gets 410 Gone
 *   (an `ERROR` event with a `Status` of code 410, then the stream ends, as real servers do; or
 *   an HTTP 410 with `goneStyle: 'http'`). With a selector, an object that stops matching is
 *   sent as DELETED and one that starts matching as ADDED. `allowWatchBookmarks=true` watches get
 *   BOOKMARK events every `bookmarkIntervalMs` and on {@link FakeApiServer.sendBookmarks}.
 *   `timeoutSeconds` ends the stream cleanly.
 * - POST (create, `generateName` supported), PUT (update, 409 on a stale resourceVersion),
 *   PATCH (merge, strategic merge and JSON patch: see patches.ts), DELETE (with DeleteOptions
 *   preconditions, 409 when they fail; a pod bound to a node is deleted gracefully: it gets a
 *   deletionTimestamp and stays until a DELETE with grace period 0); the `status` subresource
 *   for kinds that have one (pods, nodes, PVs, PVCs, namespaces), so node status PATCHes
 *   (`volumesInUse`, `volumesAttached`) work as the kubelet sends them (a nodes/status write
 *   keeps its label and annotation changes, as the real nodes/status strategy).
 * - With `nodeAuthorizer`, the refusals of the Node authorizer and NodeRestriction for a kubelet
 *   identity (node-authorizer.ts), e.g. 403 for a LIST of persistentvolumes.
 * - TokenRequest (`serviceaccounts/<name>/token`, fake-token-request.ts): a JWT-shaped token
 *   bound to the pod, which TokenReview then accepts; fail it with {@link TOKEN_REQUEST_RESOURCE}.
 * - TokenReview (authentication.k8s.io/v1) and SubjectAccessReview (authorization.k8s.io/v1),
 *   answered per token ({@link FakeApiServer.setTokenUser}) and per user
 *   ({@link FakeApiServer.setAccessPolicy}). Events are ordinary objects: create, list, watch.
 * - With `token`, every request must carry `Authorization: Bearer <token>` or gets 401.
 *
 * Test controls: write objects directly ({@link FakeApiServer.put}, `remove`), force 410 on the
 * next watch of a kind, compact the history, drop all watches (clean close), fail requests of a
 * kind/verb with a status, hold requests until released, record every request, stop and
 * restart on the same port with the same store (an API server restart).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { realClock } from '../../../clock/clock.ts';
import type { Clock, TimerHandle } from '../../../clock/clock.ts';
import type { JsonObject, JsonValue } from '../plain-json.ts';
import { isJsonObject } from '../plain-json.ts';
import { apiVersionOf, fakeResourceTypes, isFakeResource, isStoreError, metadataOf, namespaceOf, ObjectStore } from './object-store.ts';
import type { FakeResource, StoreEvent, WatchEventType } from './object-store.ts';
import { authorizeNodeRequest } from './node-authorizer.ts';
import { serveTokenRequest, tokenRequestPath } from './fake-token-request.ts';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, isPatchError } from './patches.ts';
import { isSelectorError, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from './selectors.ts';
import type { FieldRequirement, LabelRequirement } from './selectors.ts';
import { errorMessage } from '../../../volume/errors.ts';

export interface FakeApiServerOptions {
  /** Time source for watch timeouts, bookmarks and creation timestamps; default the real clock. */
  clock?: Clock;
  /** When set, requests without `Authorization: Bearer <token>` are refused with 401. */
  token?: string;
  /** BOOKMARK period for watches that allow bookmarks; 0 (default) = only on `sendBookmarks()`. */
  bookmarkIntervalMs?: number;
  /** How a watch from a compacted resourceVersion is refused; default `event` (real servers). */
  goneStyle?: GoneStyle;
  /** Writes kept for watch replay; older ones are compacted away. Default 10 000. */
  maxHistory?: number;
  /**
   * Every request is made by the kubelet of this node (`system:node:<name>`): refused as the Node
   * authorizer and NodeRestriction refuse it (see node-authorizer.ts). Default: everything allowed.
   */
  nodeAuthorizer?: string;
}

/** `event`: HTTP 200, an ERROR event with a 410 Status, end. `http`: an HTTP 410 answer. */
export type GoneStyle = 'event' | 'http';

export type FakeVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/** One request as the server saw it. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  resource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  verb: FakeVerb | 'review' | undefined;
  contentType: string | undefined;
  authorization: string | undefined;
  /** The parsed JSON body of POST/PUT/PATCH/DELETE requests. */
  body: JsonValue | undefined;
  /** The HTTP status answered (200 for a watch); undefined while the request is held or open. */
  status?: number;
  /** Which TCP connection carried the request: 1 for the server's first connection, 2 for the next… */
  connection: number;
}

/** Failure rules and holds name TokenRequests (`POST …/serviceaccounts/<name>/token`) so. */
export const TOKEN_REQUEST_RESOURCE = 'serviceaccounts/token';

export interface FailureRule {
  resource?: FakeResource | typeof TOKEN_REQUEST_RESOURCE;
  verb?: FakeVerb;
  /** The HTTP status to answer with, e.g. 403 or 500. */
  status: number;
  message?: string;
  /** How many matching requests fail; default: all until cleared. */
  times?: number;
}

/** A user as a TokenReview reports it. */
export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The `spec` of a SubjectAccessReview, narrowed. */
export interface AccessRequest {
  user: string;
  groups: string[];
  resourceAttributes?: {
    namespace?: string;
    verb?: string;
    group?: string;
    version?: string;
    resource?: string;
    subresource?: string;
    name?: string;
  };
  nonResourceAttributes?: { path?: string; verb?: string };
}

export type AccessDecision = boolean | { allowed: boolean; denied?: boolean; reason?: string };
export type AccessPolicy = AccessDecision | ((request: AccessRequest) => AccessDecision);

/** Where a URL points. */
interface Route {
  resource: FakeResource;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

interface Watcher {
  resource: FakeResource;
  namespace: string | undefined;
  fields: FieldRequirement[];
  labels: LabelRequirement[];
  bookmarks: boolean;
  res: ServerResponse;
  timer: TimerHandle | undefined;
}

interface Hold {
  resource: FakeResource | undefined;
  verb: FakeVerb | undefined;
  released: Promise<void>;
  release: () => void;
}

/** A request that cannot be served: answered with a `Status` of this code and reason. */
class RequestError extends Error {
  override readonly name = 'RequestError';
  readonly status: number;
  readonly reason: string;

  constructor(status: number, reason: string, message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

const maxBodyBytes = 8 * 1024 * 1024;

/** The fake API server's own token audience (what a TokenReview without audiences checks against). */
export const FAKE_API_SERVER_AUDIENCE = 'https://kubernetes.default.svc.cluster.local';

export class FakeApiServer {
  /** The object store; tests may also use it directly. */
  readonly store: ObjectStore;
  private readonly clock: Clock;
  private readonly options: FakeApiServerOptions;
  private server: Server;
  private portValue = 0;
  private listening = false;
  private readonly watchers = new Set<Watcher>();
  private readonly forcedGone = new Map<FakeResource, GoneStyle>();
  private failures: (FailureRule & { remaining: number })[] = [];
  private holds: Hold[] = [];
  private readonly recorded: RecordedRequest[] = [];
  private readonly connectionNumbers = new WeakMap<Socket, number>();
  private connectionsSeen = 0;
  private readonly tokenUsers = new Map<string, ReviewedUser>();
  private readonly tokenAudiences = new Map<string, string[]>();
  private readonly accessPolicies = new Map<string, AccessPolicy>();
  private defaultAccessPolicy: AccessPolicy = { allowed: false, reason: 'no access policy for this user' };
  private bookmarkTimer: TimerHandle | undefined;

  private constructor(options: FakeApiServerOptions) {
    this.options = options;
    this.clock = options.clock ?? realClock;
    this.store = new ObjectStore(this.clock, options.maxHistory);
    this.store.subscribe((event) => {
      this.broadcast(event);
    });
    this.server = this.createHttpServer();
  }

  /** Starts a server on 127.0.0.1 with an ephemeral port. */
  static async start(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    const fake = new FakeApiServer(options);
    await fake.listen(0);
    return fake;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.portValue}`;
  }

  get port(): number {
    return this.portValue;
  }

  // -------------------------------------------------------------------------------------------
  // Objects

  /** Creates or replaces an object, status included; returns the stored copy. */
  put(resource: FakeResource, object: object): JsonObject {
    return this.store.upsert(resource, toJsonObject(object));
  }

  /** Creates an object; throws if it exists. */
  create(resource: FakeResource, object: object): JsonObject {
    return this.store.create(resource, toJsonObject(object));
  }

  /** Deletes an object; throws if it does not exist. */
  remove(resource: FakeResource, namespace: string | undefined, name: string): JsonObject {
    return this.store.delete(resource, namespace, name);
  }

  get(resource: FakeResource, namespace: string | undefined, name: string): JsonObject | undefined {
    return this.store.get(resource, namespace, name);
  }

  list(resource: FakeResource, namespace?: string): JsonObject[] {
    return this.store.list(resource, namespace);
  }

  /** Events created through the API (or `put`), in one namespace or all. */
  events(namespace?: string): JsonObject[] {
    return this.store.list('events', namespace);
  }

  /** Forgets the write history: every watch from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.store.compact();
  }

  // -------------------------------------------------------------------------------------------
  // Watches

  /** The next watch request for `resource` is refused with 410 Gone, whatever its resourceVersion. */
  failNextWatch(resource: FakeResource, style: GoneStyle = 'event'): void {
    this.forcedGone.set(resource, style);
  }

  /** Ends open watch streams cleanly (as an API server does periodically). */
  dropWatches(resource?: FakeResource): void {
    for (const watcher of [...this.watchers]) {
      if (resource === undefined || watcher.resource === resource) this.endWatch(watcher);
    }
  }

  /** Sends a BOOKMARK with the current resourceVersion to watches that allow bookmarks. */
  sendBookmarks(resource?: FakeResource): void {
    for (const watcher of this.watchers) {
      if (watcher.bookmarks && (resource === undefined || watcher.resource === resource)) this.writeBookmark(watcher);
    }
  }

  /** Open watch streams (of one resource, or all). */
  watchCount(resource?: FakeResource): number {
    return [...this.watchers].filter((w) => resource === undefined || w.resource === resource).length;
  }

  // -------------------------------------------------------------------------------------------
  // Faults

  /** Requests matching `rule` are answered with its status until the returned function is called. */
  failRequests(rule: FailureRule): () => void {
    const entry = { ...rule, remaining: rule.times ?? Number.POSITIVE_INFINITY };
    this.failures.push(entry);
    return () => {
      this.failures = this.failures.filter((f) => f !== entry);
    };
  }

  /**
   * Requests matching `resource`/`verb` (either may be omitted: any) wait, without an answer,
   * until `release()` is called. Requests already waiting are let through by `release()` too.
   */
  holdRequests(filter: { resource?: FakeResource; verb?: FakeVerb }): { release: () => void } {
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hold: Hold = {
      resource: filter.resource,
      verb: filter.verb,
      released,
      release: () => {
        this.holds = this.holds.filter((h) => h !== hold);
        release();
      },
    };
    this.holds.push(hold);
    return { release: hold.release };
  }

  // -------------------------------------------------------------------------------------------
  // Records

  /** Requests received so far, oldest first, optionally filtered. */
  requests(filter: Partial<Pick<RecordedRequest, 'resource' | 'verb' | 'method' | 'name' | 'namespace'>> = {}): RecordedRequest[] {
    return this.recorded.filter((r) =>
      Object.entries(filter).every(([key, value]) => value === undefined || r[key as keyof RecordedRequest] === value),
    );
  }

  clearRequests(): void {
    this.recorded.length = 0;
  }

  // -------------------------------------------------------------------------------------------
  // Authentication and authorization reviews

  /** A TokenReview of `token` authenticates it as `user`; undefined makes the token invalid again. */
  /**
   * The audiences `token` is valid for (as a projected service-account token's `audience`); a
   * TokenReview naming audiences authenticates it only for those it shares, as the API server
   * does. Unset: valid for whatever audiences a review names (the API server's own included).
   */
  setTokenAudiences(token: string, audiences: readonly string[] | undefined): void {
    if (audiences === undefined) this.tokenAudiences.delete(token);
    else this.tokenAudiences.set(token, [...audiences]);
  }

  setTokenUser(token: string, user: ReviewedUser | undefined): void {
    if (user === undefined) this.tokenUsers.delete(token);
    else this.tokenUsers.set(token, user);
  }

  /** How SubjectAccessReviews for `user` are answered; undefined restores the default policy. */
  setAccessPolicy(user: string, policy: AccessPolicy | undefined): void {
    if (policy === undefined) this.accessPolicies.delete(user);
    else this.accessPolicies.set(user, policy);
  }

  /** The answer for users without their own policy; initially "not allowed". */
  setDefaultAccessPolicy(policy: AccessPolicy): void {
    this.defaultAccessPolicy = policy;
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycle

  /**
   * Stops answering, like a crashed API server: the listener closes and every open connection
   * (watches included) is destroyed. Clients then see connection errors. The store is kept.
   */
  async stop(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    if (this.bookmarkTimer !== undefined) this.clock.clearTimeout(this.bookmarkTimer);
    this.bookmarkTimer = undefined;
    for (const watcher of [...this.watchers]) this.forgetWatch(watcher);
    const closed = once(this.server, 'close');
    this.server.close();
    this.server.closeAllConnections();
    await closed;
  }

  /** Listens again on the same port, with the same objects and history (an API server restart). */
  async restart(): Promise<void> {
    if (this.listening) return;
    this.server = this.createHttpServer();
    await this.listen(this.portValue);
  }

  /** Stops for good; held requests are released into closed connections. */
  async close(): Promise<void> {
    await this.stop();
    for (const hold of [...this.holds]) hold.release();
  }

  // -------------------------------------------------------------------------------------------
  // HTTP

  private createHttpServer(): Server {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendStatus(res, 500, 'InternalError', errorMessage(err));
        else res.destroy();
      });
    });
    // Keep-alive sockets must not hold a stopped server open.
    server.keepAliveTimeout = 5_000;
    return server;
  }

  private async listen(port: number): Promise<void> {
    const listening = once(this.server, 'listening');
    this.server.listen(port, '127.0.0.1');
    await listening;
    this.portValue = (this.server.address() as AddressInfo).port;
    this.listening = true;
    this.armBookmarks();
  }

  private armBookmarks(): void {
    const interval = this.options.bookmarkIntervalMs ?? 0;
    if (interval <= 0 || !this.listening) return;
    this.bookmarkTimer = this.clock.setTimeout(() => {
      this.bookmarkTimer = undefined;
      this.sendBookmarks();
      this.armBookmarks();
    }, interval);
  }

  private connectionNumber(socket: Socket): number {
    let n = this.connectionNumbers.get(socket);
    if (n === undefined) {
      n = ++this.connectionsSeen;
      this.connectionNumbers.set(socket, n);
    }
    return n;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const query = Object.fromEntries(url.searchParams.entries());
    let body: JsonValue | undefined;
    let bodyError: string | undefined;
    if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE') {
      try {
        body = await readJsonBody(req);
      } catch (err) {
        bodyError = errorMessage(err);
      }
    }
    const record: RecordedRequest = {
      method,
      path: url.pathname,
      query,
      resource: undefined,
      namespace: undefined,
      name: undefined,
      subresource: undefined,
      verb: undefined,
      contentType: headerValue(req, 'content-type'),
      authorization: headerValue(req, 'authorization'),
      body,
      connection: this.connectionNumber(req.socket),
    };
    this.recorded.push(record);

    try {
      if (this.options.token !== undefined && record.authorization !== `Bearer ${this.options.token}`) {
        throw new RequestError(401, 'Unauthorized', 'Unauthorized');
      }
      if (bodyError !== undefined) throw new RequestError(400, 'BadRequest', bodyError);
      if (method === 'POST' && url.pathname === '/apis/authentication.k8s.io/v1/tokenreviews') {
        record.verb = 'review';
        sendJson(res, 201, this.tokenReview(body));
        return;
      }
      if (method === 'POST' && url.pathname === '/apis/authorization.k8s.io/v1/subjectaccessreviews') {
        record.verb = 'review';
        sendJson(res, 201, this.subjectAccessReview(body));
        return;
      }
      const tokenTarget = method === 'POST' ? tokenRequestPath(url.pathname) : undefined;
      if (tokenTarget !== undefined) {
        Object.assign(record, { resource: TOKEN_REQUEST_RESOURCE, namespace: tokenTarget.namespace, name: tokenTarget.name, subresource: 'token', verb: 'create' });
        this.serveTokenRequest(res, tokenTarget, body);
        record.status = res.statusCode;
        return;
      }
      const route = parseRoute(url.pathname);
      const verb = route === undefined ? undefined : verbOf(method, route, query);
      if (route === undefined || verb === undefined) throw new RequestError(404, 'NotFound', `the server could not find the requested resource (${method} ${url.pathname})`);
      Object.assign(record, { resource: route.resource, namespace: route.namespace, name: route.name, subresource: route.subresource, verb });
      this.checkRoute(route, verb);

      for (const hold of this.holds.filter((h) => matchesFilter(h, route.resource, verb))) await hold.released;
      // The client may have gone while the request was held (or the server stopped meanwhile).
      // (A consumed request body auto-destroys `req`, so the socket tells whether the client is there.)
      if (res.destroyed || res.socket === null || res.socket.destroyed || !this.listening) {
        res.destroy();
        return;
      }
      const failure = this.failures.find((f) => f.remaining > 0 && matchesFilter(f, route.resource, verb));
      if (failure !== undefined) {
        failure.remaining -= 1;
        throw new RequestError(failure.status, reasonFor(failure.status), failure.message ?? `injected failure of ${verb} ${route.resource}`);
      }
      this.serve(req, res, route, verb, query, body);
      record.status = res.statusCode;
    } catch (err) {
      record.status = err instanceof RequestError || isStoreError(err) ? err.status : isPatchError(err) ? err.status : isSelectorError(err) ? 400 : undefined;
      if (err instanceof RequestError) sendStatus(res, err.status, err.reason, err.message);
      else if (isStoreError(err)) sendStatus(res, err.status, err.reason, err.message);
      else if (isPatchError(err)) sendStatus(res, err.status, err.status === 400 ? 'BadRequest' : 'Invalid', err.message);
      else if (isSelectorError(err)) sendStatus(res, 400, 'BadRequest', err.message);
      else throw err;
    }
  }

  private checkRoute(route: Route, verb: FakeVerb): void {
    const type = fakeResourceTypes[route.resource];
    if (!type.namespaced && route.namespace !== undefined) throw new RequestError(404, 'NotFound', `${route.resource} is not namespaced`);
    const collectionWide = verb === 'list' || verb === 'watch';
    if (type.namespaced && !collectionWide && route.namespace === undefined) throw new RequestError(404, 'NotFound', `${route.resource} needs a namespace`);
    if (route.subresource !== undefined && !(route.subresource === 'status' && type.hasStatus)) {
      throw new RequestError(404, 'NotFound', `${route.resource} has no subresource ${route.subresource}`);
    }
  }

  /** With `nodeAuthorizer`: throws the 403 the real server would answer. */
  private authorize(route: Route, verb: FakeVerb, query: Record<string, string>, object: JsonObject | undefined, existing: JsonObject | undefined): void {
    const node = this.options.nodeAuthorizer;
    if (node === undefined) return;
    const refusal = authorizeNodeRequest(node, this.store, { resource: route.resource, verb, namespace: route.namespace, name: route.name, subresource: route.subresource, query, object, existing });
    if (refusal !== null) throw new RequestError(403, 'Forbidden', refusal.message);
  }

  private serve(req: IncomingMessage, res: ServerResponse, route: Route, verb: FakeVerb, query: Record<string, string>, body: JsonValue | undefined): void {
    const { resource, namespace, name } = route;
    if (verb === 'get' || verb === 'list' || verb === 'watch') this.authorize(route, verb, query, undefined, undefined);
    switch (verb) {
      case 'get': {
        const object = this.store.get(resource, namespace, name ?? '');
        if (object === undefined) throw new RequestError(404, 'NotFound', `${resource} "${name ?? ''}" not found`);
        sendJson(res, 200, object);
        return;
      }
      case 'list': {
        const fields = parseFieldSelector(resource, query.fieldSelector ?? '');
        const labels = parseLabelSelector(query.labelSelector ?? '');
        const type = fakeResourceTypes[resource];
        const items = this.store
          .list(resource, namespace)
          .filter((o) => matchesFields(o, fields) && matchesLabels(o, labels))
          .map(({ apiVersion: _a, kind: _k, ...item }) => item);
        sendJson(res, 200, {
          apiVersion: apiVersionOf(type),
          kind: `${type.kind}List`,
          metadata: { resourceVersion: String(this.store.currentResourceVersion()) },
          items,
        });
        return;
      }
      case 'watch':
        this.startWatch(req, res, route, query);
        return;
      case 'create': {
        const object = requireObjectBody(body);
        checkBodyNamespace(object, namespace);
        if (namespace !== undefined) setNamespace(object, namespace);
        this.authorize(route, verb, query, object, undefined);
        sendJson(res, 201, this.store.create(resource, object));
        return;
      }
      case 'update': {
        const object = requireObjectBody(body);
        checkBodyNamespace(object, namespace);
        checkBodyName(object, name);
        if (namespace !== undefined) setNamespace(object, namespace);
        this.authorize(route, verb, query, object, this.store.get(resource, namespace, name ?? ''));
        const part = route.subresource === 'status' ? 'status' : 'main';
        sendJson(res, 200, this.store.replace(resource, object, { part, checkResourceVersion: true }));
        return;
      }
      case 'patch': {
        const existing = this.store.get(resource, namespace, name ?? '');
        if (existing === undefined) throw new RequestError(404, 'NotFound', `${resource} "${name ?? ''}" not found`);
        if (body === undefined) throw new RequestError(400, 'BadRequest', 'a patch needs a body');
        const patched = applyPatch(headerValue(req, 'content-type'), existing, body);
        if (!isJsonObject(patched)) throw new RequestError(422, 'Invalid', 'the patched object is not an object');
        checkBodyName(patched, name);
        if (namespace !== undefined) setNamespace(patched, namespace);
        this.authorize(route, verb, query, patched, existing);
        const part = route.subresource === 'status' ? 'status' : 'main';
        sendJson(res, 200, this.store.replace(resource, patched, { part, checkResourceVersion: true }));
        return;
      }
      case 'delete':
        this.delete(res, route, query, body);
        return;
    }
  }

  /**
   * DELETE as the real server: 404 when absent; 409 when `preconditions.uid` (or
   * `preconditions.resourceVersion`) does not match; a pod bound to a node is deleted gracefully
   * (`metadata.deletionTimestamp` and `deletionGracePeriodSeconds` are set, the object stays)
   * unless the grace period is 0 or the pod has already terminated or is not scheduled — the
   * kubelet's final `gracePeriodSeconds: 0` DELETE removes it (pkg/registry/core/pod/strategy.go@v1.34
   * `CheckGracefulDelete`, default grace 30 s).
   */
  private delete(res: ServerResponse, route: Route, query: Record<string, string>, body: JsonValue | undefined): void {
    const { resource, namespace, name } = route;
    const existing = this.store.get(resource, namespace, name ?? '');
    if (existing === undefined) throw new RequestError(404, 'NotFound', `${resource} "${name ?? ''}" not found`);
    this.authorize(route, 'delete', query, undefined, existing);
    const options = isJsonObject(body) ? body : {};
    const preconditions = isJsonObject(options.preconditions) ? options.preconditions : {};
    const meta = metadataOf(existing);
    if (typeof preconditions.uid === 'string' && preconditions.uid !== meta.uid) {
      throw new RequestError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name ?? ''}": Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${typeof meta.uid === 'string' ? meta.uid : ''}`);
    }
    if (typeof preconditions.resourceVersion === 'string' && preconditions.resourceVersion !== meta.resourceVersion) {
      throw new RequestError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name ?? ''}": Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${typeof meta.resourceVersion === 'string' ? meta.resourceVersion : ''}`);
    }
    const grace = gracePeriodOf(query, options);
    if (resource === 'pods' && grace !== 0 && isGracefulPod(existing)) {
      if (meta.deletionTimestamp !== undefined) {
        sendJson(res, 200, existing);
        return;
      }
      const deleting = structuredClone(existing);
      const deletingMeta = metadataOf(deleting);
      deletingMeta.deletionTimestamp = new Date(this.clock.now()).toISOString().replace(/\.\d+Z$/, 'Z');
      deletingMeta.deletionGracePeriodSeconds = grace ?? 30;
      sendJson(res, 200, this.store.replace(resource, deleting, { part: 'all' }));
      return;
    }
    sendJson(res, 200, this.store.delete(resource, namespace, name ?? ''));
  }

  private startWatch(req: IncomingMessage, res: ServerResponse, route: Route, query: Record<string, string>): void {
    const { resource, namespace } = route;
    const fields = parseFieldSelector(resource, query.fieldSelector ?? '');
    const labels = parseLabelSelector(query.labelSelector ?? '');
    const rvParam = query.resourceVersion ?? '';
    const forced = this.forcedGone.get(resource);
    this.forcedGone.delete(resource);

    let replay: { type: WatchEventType; object: JsonObject }[] | undefined;
    const watcher: Watcher = { resource, namespace, fields, labels, bookmarks: query.allowWatchBookmarks === 'true', res, timer: undefined };
    if (forced === undefined) {
      if (rvParam === '' || rvParam === '0') {
        replay = this.store.list(resource, namespace).filter((o) => this.matches(watcher, o)).map((object) => ({ type: 'ADDED' as const, object }));
      } else {
        const rv = Number(rvParam);
        if (!Number.isSafeInteger(rv) || rv < 0) throw new RequestError(400, 'BadRequest', `invalid resourceVersion ${JSON.stringify(rvParam)}`);
        const events = this.store.eventsAfter(resource, rv);
        replay = events?.flatMap((e) => {
          const translated = this.translate(watcher, e);
          return translated === undefined ? [] : [translated];
        });
      }
    }
    const goneStyle = forced ?? this.options.goneStyle ?? 'event';
    const goneMessage = `too old resource version: ${rvParam} (${this.store.currentResourceVersion()})`;
    if (replay === undefined && goneStyle === 'http') throw new RequestError(410, 'Expired', goneMessage);

    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    // client-node's informer awaits the response headers before it considers the watch started.
    res.flushHeaders();
    if (replay === undefined) {
      writeEvent(res, 'ERROR', { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: goneMessage, reason: 'Expired', code: 410 });
      res.end();
      return;
    }
    this.watchers.add(watcher);
    const forget = () => {
      this.forgetWatch(watcher);
    };
    req.on('close', forget);
    res.on('close', forget);
    for (const event of replay) writeEvent(res, event.type, event.object);
    const timeoutSeconds = Number(query.timeoutSeconds ?? '0');
    if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
      watcher.timer = this.clock.setTimeout(() => {
        this.endWatch(watcher);
      }, timeoutSeconds * 1000);
    }
  }

  private matches(watcher: Watcher, object: JsonObject): boolean {
    if (watcher.namespace !== undefined && namespaceOf(object) !== watcher.namespace) return false;
    return matchesFields(object, watcher.fields) && matchesLabels(object, watcher.labels);
  }

  /** The event a watcher sees for a write, given its selectors; undefined when none. */
  private translate(watcher: Watcher, event: StoreEvent): { type: WatchEventType; object: JsonObject } | undefined {
    if (event.resource !== watcher.resource) return undefined;
    const now = this.matches(watcher, event.object);
    switch (event.type) {
      case 'ADDED':
        return now ? { type: 'ADDED', object: event.object } : undefined;
      case 'DELETED':
        return now ? { type: 'DELETED', object: event.object } : undefined;
      case 'MODIFIED': {
        const before = event.previous !== undefined && this.matches(watcher, event.previous);
        if (before && now) return { type: 'MODIFIED', object: event.object };
        if (now) return { type: 'ADDED', object: event.object };
        if (before) return { type: 'DELETED', object: event.object };
        return undefined;
      }
    }
  }

  private broadcast(event: StoreEvent): void {
    for (const watcher of this.watchers) {
      const translated = this.translate(watcher, event);
      if (translated !== undefined) writeEvent(watcher.res, translated.type, translated.object);
    }
  }

  private writeBookmark(watcher: Watcher): void {
    const type = fakeResourceTypes[watcher.resource];
    writeEvent(watcher.res, 'BOOKMARK', {
      kind: type.kind,
      apiVersion: apiVersionOf(type),
      metadata: { resourceVersion: String(this.store.currentResourceVersion()) },
    });
  }

  private endWatch(watcher: Watcher): void {
    this.forgetWatch(watcher);
    watcher.res.end();
  }

  private forgetWatch(watcher: Watcher): void {
    if (watcher.timer !== undefined) this.clock.clearTimeout(watcher.timer);
    watcher.timer = undefined;
    this.watchers.delete(watcher);
  }

  // -------------------------------------------------------------------------------------------
  // Reviews

  /** A TokenRequest (fake-token-request.ts); the minted token then passes TokenReview as its pod's service account. */
  private serveTokenRequest(res: ServerResponse, target: { namespace: string; name: string }, body: JsonValue | undefined): void {
    const failure = this.failures.find((f) => f.remaining > 0 && matchesFilter(f, TOKEN_REQUEST_RESOURCE, 'create'));
    if (failure !== undefined) {
      failure.remaining -= 1;
      throw new RequestError(failure.status, reasonFor(failure.status), failure.message ?? `injected failure of create ${TOKEN_REQUEST_RESOURCE}`);
    }
    const answer = serveTokenRequest(this.store, this.clock, this.options.nodeAuthorizer, target, body);
    if ('status' in answer) throw new RequestError(answer.status, answer.reason, answer.message);
    this.tokenUsers.set(answer.token, answer.user);
    sendJson(res, 201, answer.body);
  }

  private tokenReview(body: JsonValue | undefined): JsonObject {
    const spec = isJsonObject(body) && isJsonObject(body.spec) ? body.spec : undefined;
    if (spec === undefined || typeof spec.token !== 'string') throw new RequestError(400, 'BadRequest', 'TokenReview: spec.token is required');
    const audiences = Array.isArray(spec.audiences) ? spec.audiences.filter((a) => typeof a === 'string') : [];
    const user = this.tokenUsers.get(spec.token);
    const valid = this.tokenAudiences.get(spec.token);
    // A review naming no audiences asks for the API server's own.
    const requested = audiences.length === 0 ? [FAKE_API_SERVER_AUDIENCE] : audiences;
    const shared = valid === undefined ? audiences : requested.filter((a) => valid.includes(a));
    const status: JsonObject =
      user === undefined
        ? { authenticated: false, error: 'invalid bearer token' }
        : valid !== undefined && shared.length === 0
          ? { authenticated: false, error: 'token audiences is invalid for the target audiences' }
          : { authenticated: true, user: toJsonObject(user), audiences: shared };
    return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec, status };
  }

  private subjectAccessReview(body: JsonValue | undefined): JsonObject {
    const spec = isJsonObject(body) && isJsonObject(body.spec) ? body.spec : undefined;
    if (spec === undefined) throw new RequestError(400, 'BadRequest', 'SubjectAccessReview: spec is required');
    const user = typeof spec.user === 'string' ? spec.user : '';
    const request: AccessRequest = {
      user,
      groups: Array.isArray(spec.groups) ? spec.groups.filter((g) => typeof g === 'string') : [],
      ...(isJsonObject(spec.resourceAttributes) ? { resourceAttributes: stringFields(spec.resourceAttributes) } : {}),
      ...(isJsonObject(spec.nonResourceAttributes) ? { nonResourceAttributes: stringFields(spec.nonResourceAttributes) } : {}),
    };
    const policy = this.accessPolicies.get(user) ?? this.defaultAccessPolicy;
    const decision = typeof policy === 'function' ? policy(request) : policy;
    const status: JsonObject =
      typeof decision === 'boolean'
        ? { allowed: decision }
        : {
            allowed: decision.allowed,
            ...(decision.denied === undefined ? {} : { denied: decision.denied }),
            ...(decision.reason === undefined ? {} : { reason: decision.reason }),
          };
    return { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', metadata: {}, spec, status };
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** A plain JSON copy of a test object (k8s-types objects, literals). */
function toJsonObject(object: object): JsonObject {
  const copy: unknown = JSON.parse(JSON.stringify(object));
  if (!isJsonObject(copy)) throw new TypeError('expected a JSON object');
  return copy;
}

function stringFields(object: JsonObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(object)) if (typeof value === 'string') out[key] = value;
  return out;
}

/**
 * `/api/v1/...` or `/apis/<group>/<version>/...`, then `<resource>[/<name>[/<sub>]]` or
 * `namespaces/<ns>/<resource>[/<name>[/<sub>]]`.
 */
function parseRoute(pathname: string): Route | undefined {
  const segments = pathname.split('/').filter((s) => s !== '').map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api') {
    group = '';
    version = segments[1] ?? '';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis') {
    group = segments[1] ?? '';
    version = segments[2] ?? '';
    rest = segments.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  // `namespaces/<ns>/<resource>…` names a namespaced resource, unless the third segment is a
  // subresource of the namespace itself.
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = '', name, subresource, ...extra] = rest;
  if (extra.length > 0 || !isFakeResource(resource)) return undefined;
  const type = fakeResourceTypes[resource];
  if (type.group !== group || type.version !== version) return undefined;
  return { resource, namespace, name, subresource };
}

/** `gracePeriodSeconds` of the query or the DeleteOptions body; undefined when neither has one. */
function gracePeriodOf(query: Record<string, string>, options: JsonObject): number | undefined {
  if (typeof options.gracePeriodSeconds === 'number') return options.gracePeriodSeconds;
  const fromQuery = query.gracePeriodSeconds;
  return fromQuery === undefined ? undefined : Number(fromQuery);
}

/** A pod that is scheduled and has not terminated: its deletion waits for its node. */
function isGracefulPod(pod: JsonObject): boolean {
  const spec = isJsonObject(pod.spec) ? pod.spec : {};
  const status = isJsonObject(pod.status) ? pod.status : {};
  return typeof spec.nodeName === 'string' && spec.nodeName !== '' && status.phase !== 'Succeeded' && status.phase !== 'Failed';
}

function verbOf(method: string, route: Route, query: Record<string, string>): FakeVerb | undefined {
  const named = route.name !== undefined;
  switch (method) {
    case 'GET':
      if (named) return 'get';
      return query.watch === 'true' || query.watch === '1' ? 'watch' : 'list';
    case 'POST':
      return named ? undefined : 'create';
    case 'PUT':
      return named ? 'update' : undefined;
    case 'PATCH':
      return named ? 'patch' : undefined;
    case 'DELETE':
      return named ? 'delete' : undefined;
    default:
      return undefined;
  }
}

function matchesFilter(
  filter: { resource?: FakeResource | typeof TOKEN_REQUEST_RESOURCE | undefined; verb?: FakeVerb | undefined },
  resource: FakeResource | typeof TOKEN_REQUEST_RESOURCE,
  verb: FakeVerb,
): boolean {
  return (filter.resource === undefined || filter.resource === resource) && (filter.verb === undefined || filter.verb === verb);
}

function applyPatch(contentType: string | undefined, existing: JsonObject, patch: JsonValue): JsonValue {
  const mediaType = (contentType ?? '').split(';', 1)[0]?.trim();
  switch (mediaType) {
    case 'application/merge-patch+json':
      return applyMergePatch(existing, patch);
    case 'application/strategic-merge-patch+json':
      return applyStrategicMergePatch(existing, patch);
    case 'application/json-patch+json':
      return applyJsonPatch(existing, patch);
    default:
      throw new RequestError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got ${contentType ?? 'none'})`);
  }
}

function requireObjectBody(body: JsonValue | undefined): JsonObject {
  if (!isJsonObject(body)) throw new RequestError(400, 'BadRequest', 'the request body must be a JSON object');
  return body;
}

function checkBodyNamespace(object: JsonObject, namespace: string | undefined): void {
  const bodyNamespace = isJsonObject(object.metadata) ? object.metadata.namespace : undefined;
  if (namespace !== undefined && typeof bodyNamespace === 'string' && bodyNamespace !== '' && bodyNamespace !== namespace) {
    throw new RequestError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
  }
}

function checkBodyName(object: JsonObject, name: string | undefined): void {
  if (metadataOf(object).name !== name) throw new RequestError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
}

function setNamespace(object: JsonObject, namespace: string): void {
  const metadata = isJsonObject(object.metadata) ? object.metadata : {};
  metadata.namespace = namespace;
  object.metadata = metadata;
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

async function readJsonBody(req: IncomingMessage): Promise<JsonValue | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > maxBodyBytes) throw new Error('request body too large');
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw new Error('the request body is not valid JSON');
  }
}

function reasonFor(status: number): string {
  switch (status) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 409:
      return 'Conflict';
    case 410:
      return 'Expired';
    case 429:
      return 'TooManyRequests';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return 'InternalError';
  }
}

function sendJson(res: ServerResponse, status: number, body: JsonValue): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendStatus(res: ServerResponse, code: number, reason: string, message: string): void {
  sendJson(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

function writeEvent(res: ServerResponse, type: WatchEventType | 'ERROR' | 'BOOKMARK', object: JsonObject): void {
  if (res.writableEnded || res.destroyed) return;
  res.write(`${JSON.stringify({ type, object })}\n`);
}
