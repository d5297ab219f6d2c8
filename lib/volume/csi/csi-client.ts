/**
 * The agent's CSI client (kubelet `csiDriverClient`, pkg/volume/csi/csi_client.go): real gRPC
 * over the driver's unix socket with `@grpc/grpc-js`, message shapes from the repo's .proto
 * subset (csi-types.ts). One client per driver endpoint; one channel per client, reused by
 * every call (grpc-js reconnects by itself; the kubelet dials per call, which grpc-js makes
 * unnecessary).
 *
 * Contracts of every call:
 * - A deadline: `timeoutMs` of the call, else the client's default, else 2 minutes (the
 *   kubelet's `csiTimeout`). The deadline runs on the injected Clock; when it expires the call
 *   is cancelled and rejects with a {@link CsiRpcError} DeadlineExceeded,
 *   `context deadline exceeded` (the Go wording). The driver sees a cancellation.
 * - A non-OK status rejects with a {@link CsiRpcError}; anything else with a
 *   {@link CsiTransportError}. Use `isFinalCsiError` / `classifyCsiError` to decide between
 *   final and uncertain outcomes.
 * - Secrets: requests are logged (debug) only through `redactSecrets`; error details returned by
 *   the driver for a call that carried secrets have those secret values replaced by
 *   `***stripped***` before they reach any message.
 * - Size: the driver's error details (and transport error texts) are cut to
 *   `MESSAGE_LENGTH_LIMIT` characters with a visible marker (`truncateMessage`) after the
 *   secrets are replaced, so no log line, event or snapshot field carries a driver's megabyte.
 */
import * as grpc from '@grpc/grpc-js';
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import { truncateMessage } from '../../truncate-message.ts';
import { debugEnabled, discardLogger, type Logger } from '../logger.ts';
import { CsiRpcError, CsiTransportError } from './csi-errors.ts';
import { CSI_METHODS, methodDefinition, REGISTRATION_METHODS, type CsiMethod, type RegistrationMethod } from './csi-proto.ts';
import type {
  ControllerGetCapabilitiesResponse,
  ControllerGetVolumeResponse,
  ControllerPublishVolumeRequest,
  ControllerPublishVolumeResponse,
  ControllerUnpublishVolumeRequest,
  GetPluginCapabilitiesResponse,
  GetPluginInfoResponse,
  ListVolumesRequest,
  ListVolumesResponse,
  NodeExpandVolumeRequest,
  NodeExpandVolumeResponse,
  NodeGetCapabilitiesResponse,
  NodeGetInfoResponse,
  NodeGetVolumeStatsRequest,
  NodeGetVolumeStatsResponse,
  NodePublishVolumeRequest,
  NodeStageVolumeRequest,
  NodeUnpublishVolumeRequest,
  NodeUnstageVolumeRequest,
  PluginInfo,
  ProbeResponse,
  RegistrationStatus,
} from './csi-types.ts';
import { collectSecretValues, redactSecrets, scrubSecretValues } from './redact.ts';
import { errorMessage } from '../errors.ts';

/** A call on a grpc-js channel (the channel's low-level call API). */
type GrpcCall = ReturnType<grpc.ChannelInterface['createCall']>;

/** `csiTimeout`: the kubelet's deadline for each CSI call. */
export const DEFAULT_CSI_TIMEOUT_MS = 2 * 60_000;

/** The Go text of an expired context, used for the client's own deadline. */
export const DEADLINE_EXCEEDED_DETAILS = 'context deadline exceeded';

export interface CallOptions {
  /** Deadline of this call in milliseconds; overrides the client's default. */
  timeoutMs?: number;
}

export interface GrpcUnixClientOptions {
  clock: Clock;
  /** Default deadline of every call; default {@link DEFAULT_CSI_TIMEOUT_MS}. */
  timeoutMs?: number;
  logger?: Logger;
  /** Extra fields on every log line (e.g. `{ driver }`). */
  logFields?: Record<string, unknown>;
  /**
   * Called once per finished call, successful or not (the kubelet's `RecordMetricsInterceptor`
   * on its CSI connections): for `csi_operations_seconds` and the driver panel. Never throws
   * into the call: a failing observer is logged.
   */
  onCall?: (call: CsiCallSample) => void;
}

/** One finished call as {@link GrpcUnixClientOptions.onCall} sees it. */
export interface CsiCallSample {
  /** The RPC, e.g. `NodeStageVolume`. */
  method: CsiMethod | RegistrationMethod;
  /** The gRPC method path, e.g. `/csi.v1.Node/NodeStageVolume` (the kubelet's `method_name` label). */
  fullMethod: string;
  /**
   * Go's name of the status code (`OK`, `DeadlineExceeded`, …), or `unknown-non-grpc` when the
   * call failed without a gRPC status (the kubelet's `getErrorCode`).
   */
  grpcStatusCode: string;
  /** Epoch ms when the call was sent. */
  startedAt: number;
  durationMs: number;
  /**
   * The request with every secret value replaced by `***stripped***`, computed on demand (a deep
   * copy: observers that keep no request, like the metric, pay nothing for it).
   */
  redactedRequest: () => object;
  /** The request's `volume_id`, when it has one (never a secret). */
  volumeId: string | null;
  /** The response on success; null on failure. */
  response: unknown;
  /** The error text (secrets scrubbed, cut); null on success. */
  error: string | null;
}

function requestParts(request: object): Pick<CsiCallSample, 'redactedRequest' | 'volumeId'> {
  const volumeId = (request as { volume_id?: unknown }).volume_id;
  return { redactedRequest: () => redactSecrets(request), volumeId: typeof volumeId === 'string' ? volumeId : null };
}

/** The kubelet's `grpc_status_code` of a call that failed without a gRPC status. */
export const UNKNOWN_NON_GRPC = 'unknown-non-grpc';

/**
 * `unix:///abs/path` for a socket path; an endpoint that already has a `unix:` scheme is
 * returned unchanged. Relative paths are refused: the agent's working directory is no anchor.
 */
export function unixEndpoint(pathOrEndpoint: string): string {
  if (pathOrEndpoint.startsWith('unix:')) return pathOrEndpoint;
  if (!pathOrEndpoint.startsWith('/')) throw new Error(`CSI endpoint ${JSON.stringify(pathOrEndpoint)} is neither unix://<path> nor an absolute socket path`);
  return `unix://${pathOrEndpoint}`;
}

/**
 * A gRPC channel to one unix socket with Clock-driven deadlines, error conversion and redacted
 * request logging. {@link CsiClient} and the plugin-registration client build on it.
 */
export class GrpcUnixClient {
  /** `unix:///path` */
  readonly endpoint: string;
  protected readonly clock: Clock;
  protected readonly log: Logger;
  private readonly defaultTimeoutMs: number;
  private readonly logFields: Record<string, unknown>;
  private readonly onCall: ((call: CsiCallSample) => void) | null;
  private channel: grpc.Client | null = null;
  private closed = false;

  constructor(endpoint: string, opts: GrpcUnixClientOptions) {
    this.endpoint = unixEndpoint(endpoint);
    this.clock = opts.clock;
    this.log = opts.logger ?? discardLogger;
    this.defaultTimeoutMs = opts.timeoutMs ?? DEFAULT_CSI_TIMEOUT_MS;
    this.logFields = opts.logFields ?? {};
    this.onCall = opts.onCall ?? null;
  }

  /** Closes the channel; later calls reject with a transport error. Idempotent. */
  close(): void {
    this.closed = true;
    this.channel?.close();
    this.channel = null;
  }

  protected unary<Res>(
    service: string,
    method: CsiMethod | RegistrationMethod,
    request: object,
    opts: CallOptions | undefined,
  ): Promise<Res> {
    const timeoutMs = opts?.timeoutMs ?? this.defaultTimeoutMs;
    const secrets = collectSecretValues(request);
    // The debug lines' fields (a redacted deep copy of the request) are built only when they are written.
    const debug = debugEnabled(this.log);
    if (debug) this.log.debug(`calling ${method} rpc`, { ...this.logFields, endpoint: this.endpoint, request: redactSecrets(request), timeoutMs });
    if (this.closed) return Promise.reject(new CsiTransportError(method, `${method}: the CSI client for ${this.endpoint} is closed`));
    let channel: grpc.ChannelInterface;
    let def;
    try {
      def = methodDefinition(service, method);
      channel = this.getChannel();
    } catch (err) {
      return Promise.reject(new CsiTransportError(method, `${method}: ${errorMessage(err)}`, { cause: err }));
    }
    const { path, requestSerialize, responseDeserialize } = def;
    const started = this.clock.monotonic();
    const startedAt = this.clock.now();
    return new Promise<Res>((resolve, reject) => {
      let timedOut = false;
      const deadline: { timer?: TimerHandle } = {};
      const done = (status: grpc.StatusObject | null, value: unknown): void => {
        if (deadline.timer !== undefined) this.clock.clearTimeout(deadline.timer);
        const durationMs = Math.round(this.clock.monotonic() - started);
        if (status === null) {
          if (debug) this.log.debug(`${method} rpc succeeded`, { ...this.logFields, durationMs });
          this.observe({ method, fullMethod: path, grpcStatusCode: 'OK', startedAt, durationMs, ...requestParts(request), response: value, error: null });
          resolve(value as Res);
          return;
        }
        const failure = this.toError(method, status, timedOut, secrets);
        if (debug) this.log.debug(`${method} rpc failed`, { ...this.logFields, durationMs, error: failure.message });
        const grpcStatusCode = failure instanceof CsiRpcError ? failure.codeName : UNKNOWN_NON_GRPC;
        this.observe({ method, fullMethod: path, grpcStatusCode, startedAt, durationMs, ...requestParts(request), response: null, error: failure.message });
        reject(failure);
      };
      // One unary call on the channel's own call API, as grpc-js's Client.makeUnaryRequest does it
      // (start, one read, the message, half-close), without its per-call interceptor chain, event
      // emitter and caller-stack Error: a NodeGetVolumeStats per CSI volume and pass makes those the
      // bulk of the client's CPU. The outcomes are grpc-js's: a second response message is
      // UNIMPLEMENTED "Too many responses received", none is UNIMPLEMENTED "No message received",
      // an undecodable one INTERNAL "Response message parsing error: …", a request that cannot be
      // encoded INTERNAL "Request message serialization failure: …".
      let message: Buffer;
      try {
        message = requestSerialize(request);
      } catch (err) {
        done({ code: grpc.status.INTERNAL, details: `Request message serialization failure: ${errorMessage(err)}`, metadata: new grpc.Metadata() }, null);
        return;
      }
      let call: GrpcCall;
      try {
        call = channel.createCall(path, Infinity, null, null, null);
        let response: unknown = null;
        let received = false;
        let readError: grpc.StatusObject | null = null;
        let finished = false;
        call.start(new grpc.Metadata(), {
          onReceiveMetadata: () => undefined,
          onReceiveMessage: (data: Buffer) => {
            if (received) {
              call.cancelWithStatus(grpc.status.UNIMPLEMENTED, 'Too many responses received');
              return;
            }
            received = true;
            try {
              response = responseDeserialize(data);
            } catch (err) {
              readError = { code: grpc.status.INTERNAL, details: `Response message parsing error: ${errorMessage(err)}`, metadata: new grpc.Metadata() };
              call.cancelWithStatus(readError.code, readError.details);
            }
          },
          onReceiveStatus: (status: grpc.StatusObject) => {
            if (finished) return;
            finished = true;
            if (readError !== null) done(readError, null);
            else if (status.code !== grpc.status.OK) done(status, null);
            else if (!received) done({ code: grpc.status.UNIMPLEMENTED, details: 'No message received', metadata: status.metadata }, null);
            else done(null, response);
          },
        });
        call.startRead();
        call.sendMessageWithContext({}, message);
        call.halfClose();
      } catch (err) {
        reject(new CsiTransportError(method, `${method}: ${truncateMessage(scrubSecretValues(errorMessage(err), secrets))}`, { cause: err }));
        return;
      }
      deadline.timer = this.clock.setTimeout(() => {
        timedOut = true;
        call.cancelWithStatus(grpc.status.CANCELLED, 'Cancelled on client');
      }, timeoutMs);
    });
  }

  private observe(call: CsiCallSample): void {
    if (this.onCall === null) return;
    try {
      this.onCall(call);
    } catch (err) {
      this.log.error('the CSI call observer failed', { ...this.logFields, error: errorMessage(err) });
    }
  }

  private toError(method: CsiMethod | RegistrationMethod, status: grpc.StatusObject, timedOut: boolean, secrets: readonly string[]): Error {
    if (timedOut) return new CsiRpcError(method, grpc.status.DEADLINE_EXCEEDED, DEADLINE_EXCEEDED_DETAILS);
    return new CsiRpcError(method, status.code, truncateMessage(scrubSecretValues(status.details, secrets)));
  }

  private getChannel(): grpc.ChannelInterface {
    this.channel ??= new grpc.Client(this.endpoint, grpc.credentials.createInsecure(), {
      // A driver that restarts must be reachable again quickly: the default reconnect backoff
      // grows to two minutes, longer than any caller's patience.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
    return this.channel.getChannel();
  }
}

/** A client for the CSI Identity, Controller and Node services of one driver. */
export class CsiClient extends GrpcUnixClient {
  private call<Res>(method: CsiMethod, request: object, opts?: CallOptions): Promise<Res> {
    return this.unary<Res>(CSI_METHODS[method], method, request, opts);
  }

  // Identity

  getPluginInfo(opts?: CallOptions): Promise<GetPluginInfoResponse> {
    return this.call('GetPluginInfo', {}, opts);
  }

  getPluginCapabilities(opts?: CallOptions): Promise<GetPluginCapabilitiesResponse> {
    return this.call('GetPluginCapabilities', {}, opts);
  }

  probe(opts?: CallOptions): Promise<ProbeResponse> {
    return this.call('Probe', {}, opts);
  }

  // Node

  nodeGetInfo(opts?: CallOptions): Promise<NodeGetInfoResponse> {
    return this.call('NodeGetInfo', {}, opts);
  }

  nodeGetCapabilities(opts?: CallOptions): Promise<NodeGetCapabilitiesResponse> {
    return this.call('NodeGetCapabilities', {}, opts);
  }

  async nodeStageVolume(req: NodeStageVolumeRequest, opts?: CallOptions): Promise<void> {
    await this.call('NodeStageVolume', req, opts);
  }

  async nodeUnstageVolume(req: NodeUnstageVolumeRequest, opts?: CallOptions): Promise<void> {
    await this.call('NodeUnstageVolume', req, opts);
  }

  async nodePublishVolume(req: NodePublishVolumeRequest, opts?: CallOptions): Promise<void> {
    await this.call('NodePublishVolume', req, opts);
  }

  async nodeUnpublishVolume(req: NodeUnpublishVolumeRequest, opts?: CallOptions): Promise<void> {
    await this.call('NodeUnpublishVolume', req, opts);
  }

  nodeExpandVolume(req: NodeExpandVolumeRequest, opts?: CallOptions): Promise<NodeExpandVolumeResponse> {
    return this.call('NodeExpandVolume', req, opts);
  }

  nodeGetVolumeStats(req: NodeGetVolumeStatsRequest, opts?: CallOptions): Promise<NodeGetVolumeStatsResponse> {
    return this.call('NodeGetVolumeStats', req, opts);
  }

  // Controller

  controllerGetCapabilities(opts?: CallOptions): Promise<ControllerGetCapabilitiesResponse> {
    return this.call('ControllerGetCapabilities', {}, opts);
  }

  controllerPublishVolume(req: ControllerPublishVolumeRequest, opts?: CallOptions): Promise<ControllerPublishVolumeResponse> {
    return this.call('ControllerPublishVolume', req, opts);
  }

  async controllerUnpublishVolume(req: ControllerUnpublishVolumeRequest, opts?: CallOptions): Promise<void> {
    await this.call('ControllerUnpublishVolume', req, opts);
  }

  /** One page; see {@link listAllVolumes} for the paginated listing. */
  listVolumes(req: ListVolumesRequest, opts?: CallOptions): Promise<ListVolumesResponse> {
    return this.call('ListVolumes', req, opts);
  }

  controllerGetVolume(volumeId: string, opts?: CallOptions): Promise<ControllerGetVolumeResponse> {
    return this.call('ControllerGetVolume', { volume_id: volumeId }, opts);
  }

  /**
   * Every volume, following `next_token` page by page (`pageSize` = `max_entries`, 0 = the
   * plugin decides). Each page is one call with its own deadline. The walk is bounded, so a
   * broken or hostile plugin can neither loop the caller forever nor make it hold unbounded
   * memory; each of these fails the whole listing with a {@link ListVolumesPaginationError}:
   * a next_token seen before, a page past `maxPages` (default {@link MAX_LIST_VOLUMES_PAGES}),
   * a next_token longer than {@link MAX_LIST_VOLUMES_TOKEN_LENGTH}, a page with more than
   * `max_entries` entries (which the CSI spec forbids). The kubelet itself never lists volumes;
   * external-attacher, which does, also stops only at an empty token.
   */
  async listAllVolumes(pageSize = 0, opts?: CallOptions & { maxPages?: number }): Promise<ListVolumesResponse['entries']> {
    const maxPages = opts?.maxPages ?? MAX_LIST_VOLUMES_PAGES;
    const fail = (what: string) => new ListVolumesPaginationError(`ListVolumes of ${this.endpoint}: ${what}; the volumes cannot be listed`);
    const entries: ListVolumesResponse['entries'] = [];
    const seen = new Set<string>();
    let token = '';
    for (let pages = 1; ; pages++) {
      const page = await this.listVolumes({ max_entries: pageSize, starting_token: token }, opts);
      if (pageSize > 0 && page.entries.length > pageSize) throw fail(`page ${pages} has ${page.entries.length} entries, more than max_entries ${pageSize}`);
      entries.push(...page.entries);
      const next = page.next_token;
      if (next === '') return entries;
      if (next.length > MAX_LIST_VOLUMES_TOKEN_LENGTH) throw fail(`page ${pages} returned a next_token of ${next.length} characters (at most ${MAX_LIST_VOLUMES_TOKEN_LENGTH} are accepted)`);
      if (seen.has(next)) throw fail(`page ${pages} returned the next_token ${JSON.stringify(next)} a second time`);
      if (pages >= maxPages) throw fail(`page ${pages} still returned a next_token (${JSON.stringify(next)}); giving up after ${maxPages} pages, ${entries.length} entries`);
      seen.add(next);
      token = next;
    }
  }
}

/** How many ListVolumes pages {@link CsiClient.listAllVolumes} follows at most (100 000 volumes at 100 a page). */
export const MAX_LIST_VOLUMES_PAGES = 1000;

/** The longest ListVolumes next_token accepted; real drivers use short offsets or ids. */
export const MAX_LIST_VOLUMES_TOKEN_LENGTH = 4096;

/** A driver's ListVolumes pagination that does not end or breaks the CSI contract. */
export class ListVolumesPaginationError extends Error {
  override readonly name = 'ListVolumesPaginationError';
}

export function isListVolumesPaginationError(err: unknown): err is ListVolumesPaginationError {
  return err instanceof ListVolumesPaginationError;
}

/** A client for a plugin's registration socket (`pluginregistration.Registration`). */
export class PluginRegistrationClient extends GrpcUnixClient {
  getInfo(opts?: CallOptions): Promise<PluginInfo> {
    return this.unary(REGISTRATION_METHODS.GetInfo, 'GetInfo', {}, opts);
  }

  async notifyRegistrationStatus(status: RegistrationStatus, opts?: CallOptions): Promise<void> {
    await this.unary(REGISTRATION_METHODS.NotifyRegistrationStatus, 'NotifyRegistrationStatus', status, opts);
  }
}
