/**
 * What the driver panel shows of each CSI driver's calls, kept in bounded memory: per method a
 * latency histogram (the buckets of the kubelet's `csi_operations_seconds`) and the count per
 * gRPC status code, the latest calls (requests with secrets redacted), and the history of the
 * driver's Probe and GetPluginInfo answers.
 *
 * Bounds: {@link RECENT_CALLS_PER_DRIVER} calls and {@link PROBES_PER_DRIVER} probe results per
 * driver (oldest dropped first), at most {@link MAX_DRIVERS} drivers (a driver's stats go with the
 * least recently called one), each request's JSON cut to {@link REQUEST_TEXT_LIMIT} characters.
 * Successful NodeGetVolumeStats calls (one per volume per stats period) and Probe /
 * GetPluginInfo calls (which have their own history) count in the histograms but are not listed
 * as recent calls, so the periodic calls never push the operations' calls out of the list.
 *
 * The counters are cumulative since the agent started, like the metric; `view()` returns new
 * objects each time (the snapshot may keep them).
 */
import { truncateMessage } from '../../truncate-message.ts';
import type { CsiCallRecord } from './csi-driver-registry.ts';

/** The kubelet's `csi_operations_seconds` buckets (kubernetes/kubernetes pkg/volume/util/metrics.go@v1.34), in seconds. */
export const CSI_OPERATION_BUCKETS_SECONDS: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600];

export const RECENT_CALLS_PER_DRIVER = 50;
export const PROBES_PER_DRIVER = 60;
export const MAX_DRIVERS = 64;
export const REQUEST_TEXT_LIMIT = 2048;

/** One method of one driver. */
export interface CsiMethodStatsView {
  method: string;
  calls: number;
  /** Calls by status code name (`OK`, `DeadlineExceeded`, …, `unknown-non-grpc`). */
  codes: Record<string, number>;
  /** Calls per bucket (not cumulative): `[i]` counts durations ≤ bucket i and above bucket i-1; the last entry counts those above the last bucket. */
  buckets: number[];
  totalMs: number;
  maxMs: number;
}

/** One call of the recent-calls list. */
export interface CsiCallView {
  at: number;
  method: string;
  code: string;
  durationMs: number;
  /** `volume_id` of the request, when it has one. */
  volumeId: string | null;
  /** The request as JSON, secrets replaced by `***stripped***`, cut to {@link REQUEST_TEXT_LIMIT}. */
  request: string;
  error: string | null;
}

/** One Probe or GetPluginInfo answer. */
export interface CsiProbeView {
  at: number;
  method: 'Probe' | 'GetPluginInfo';
  code: string;
  durationMs: number;
  /** Probe's `ready` (null when unset or the call failed); GetPluginInfo: null. */
  ready: boolean | null;
  /** GetPluginInfo's `vendor_version`; null otherwise. */
  vendorVersion: string | null;
  error: string | null;
}

export interface CsiDriverCallsView {
  driver: string;
  methods: CsiMethodStatsView[];
  recentCalls: CsiCallView[];
  probes: CsiProbeView[];
}

interface DriverStats {
  methods: Map<string, CsiMethodStatsView>;
  recentCalls: CsiCallView[];
  probes: CsiProbeView[];
  lastCallAt: number;
}

export class CsiCallStats {
  private readonly drivers = new Map<string, DriverStats>();
  private readonly listeners = new Set<() => void>();

  /** Records one finished call (hand it to the registry as `onCall`). */
  readonly record = (call: CsiCallRecord): void => {
    const stats = this.driverStats(call.driver, call.startedAt);
    let method = stats.methods.get(call.method);
    if (method === undefined) {
      method = { method: call.method, calls: 0, codes: {}, buckets: new Array<number>(CSI_OPERATION_BUCKETS_SECONDS.length + 1).fill(0), totalMs: 0, maxMs: 0 };
      stats.methods.set(call.method, method);
    }
    method.calls++;
    method.codes[call.grpcStatusCode] = (method.codes[call.grpcStatusCode] ?? 0) + 1;
    const seconds = call.durationMs / 1000;
    const bucket = CSI_OPERATION_BUCKETS_SECONDS.findIndex((le) => seconds <= le);
    const at = bucket < 0 ? CSI_OPERATION_BUCKETS_SECONDS.length : bucket;
    method.buckets[at] = (method.buckets[at] ?? 0) + 1;
    method.totalMs += call.durationMs;
    method.maxMs = Math.max(method.maxMs, call.durationMs);
    if (call.method === 'Probe' || call.method === 'GetPluginInfo') {
      push(stats.probes, probeView(call, call.method), PROBES_PER_DRIVER);
    } else if (call.method !== 'NodeGetVolumeStats' || call.error !== null) {
      push(stats.recentCalls, callView(call), RECENT_CALLS_PER_DRIVER);
    }
    for (const listener of this.listeners) listener();
  };

  /** Every driver with calls, by name. */
  view(): CsiDriverCallsView[] {
    return [...this.drivers.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([driver, s]) => ({
        driver,
        methods: [...s.methods.values()].sort((a, b) => (a.method < b.method ? -1 : 1)).map((m) => ({ ...m, codes: { ...m.codes }, buckets: [...m.buckets] })),
        recentCalls: [...s.recentCalls],
        probes: [...s.probes],
      }));
  }

  /** Called after every recorded call. Returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private driverStats(driver: string, at: number): DriverStats {
    let stats = this.drivers.get(driver);
    if (stats === undefined) {
      if (this.drivers.size >= MAX_DRIVERS) {
        const oldest = [...this.drivers.entries()].reduce((a, b) => (b[1].lastCallAt < a[1].lastCallAt ? b : a));
        this.drivers.delete(oldest[0]);
      }
      stats = { methods: new Map(), recentCalls: [], probes: [], lastCallAt: at };
      this.drivers.set(driver, stats);
    }
    stats.lastCallAt = at;
    return stats;
  }
}

function push<T>(ring: T[], item: T, limit: number): void {
  ring.push(item);
  if (ring.length > limit) ring.splice(0, ring.length - limit);
}

function callView(call: CsiCallRecord): CsiCallView {
  return {
    at: call.startedAt,
    method: call.method,
    code: call.grpcStatusCode,
    durationMs: call.durationMs,
    volumeId: call.volumeId,
    request: truncateMessage(JSON.stringify(call.redactedRequest()), REQUEST_TEXT_LIMIT),
    error: call.error,
  };
}

function probeView(call: CsiCallRecord, method: 'Probe' | 'GetPluginInfo'): CsiProbeView {
  const response = call.response as { ready?: { value?: unknown } | null; vendor_version?: unknown } | null;
  const ready = method === 'Probe' && typeof response?.ready?.value === 'boolean' ? response.ready.value : null;
  const vendorVersion = method === 'GetPluginInfo' && typeof response?.vendor_version === 'string' ? response.vendor_version : null;
  return { at: call.startedAt, method, code: call.grpcStatusCode, durationMs: call.durationMs, ready, vendorVersion, error: call.error };
}
