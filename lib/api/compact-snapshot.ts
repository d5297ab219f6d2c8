/**
 * The `compact/v2` encoding of a snapshot (issue "Performance", requirement 4: ≤ 5 MB of JSON at
 * 10k volumes): what `GET /api/v1/snapshot` and the first event of `GET /api/v1/events` send
 * unless `?encoding=full` asks for the {@link Snapshot} form (docs/api.md "Compact snapshot").
 *
 * Contract: `decodeCompactSnapshot(encodeCompactSnapshot(s))` deep-equals `s` for every valid
 * snapshot. Only the four big arrays (`desired.pods`, `actual.volumes`, `mountHealth`,
 * `volumeStats`) are encoded; every other field is sent as in the full form. Within those:
 * - short keys;
 * - default values omitted (false, `mounted`, `attached`, `not-mounted`, `''`, `healthy`, null);
 * - values omitted only when exactly derivable from the same item: a unique volume name equal to
 *   `<plugin>/<podUid>-<name>`, a pod name equal to the pod UID, a path under the top-level
 *   `podsDir` (written relative to `<podsDir>/<podUid>/`);
 * - plugin names as indexes into the fixed {@link COMPACT_PLUGIN_NAMES} table (others as text).
 * There are no references between items: each item decodes on its own, so deltas (which carry
 * full items) stay as they are.
 */
import { z } from 'zod';
import { MountHealthStateSchema, type MountHealth } from './mount-health.ts';
import {
  ContainerStateSchema,
  DesiredVolumeSpecSchema,
  SnapshotSchema,
  type ActualVolume,
  type DesiredPod,
  type DesiredVolume,
  type PodMount,
  type Snapshot,
  type VolumeStats,
} from './snapshot.ts';

/** The `encoding` field of a compact snapshot. */
export const COMPACT_ENCODING = 'compact/v2';

/** The snapshot encodings `?encoding=` accepts; `compact` is the default. */
export const SNAPSHOT_ENCODINGS = ['compact', 'full'] as const;
/** A snapshot encoding `?encoding=` accepts. */
export type SnapshotEncoding = (typeof SNAPSHOT_ENCODINGS)[number];

/** Plugin names sent as their index here. Fixed: appending is compatible, reordering is not. */
export const COMPACT_PLUGIN_NAMES: readonly string[] = [
  'kubernetes.io/empty-dir',
  'kubernetes.io/configmap',
  'kubernetes.io/secret',
  'kubernetes.io/projected',
  'kubernetes.io/downward-api',
  'kubernetes.io/host-path',
  'kubernetes.io/csi',
  'kubernetes.io/local-volume',
  'kubernetes.io/nfs',
  'kubernetes.io/iscsi',
  'kubernetes.io/fc',
  'kubernetes.io/git-repo',
];

const PluginSchema = z.union([z.number().int().nonnegative().max(COMPACT_PLUGIN_NAMES.length - 1), z.string()]);
const EpochMs = z.number().int().nonnegative();
const Num = z.number().nonnegative().nullable().optional();

/** A desired volume: n name, u unique name (absent: `<plugin>/<podUid>-<n>`), p plugin, a/d/r attachable/deviceMountable/reportedInUse (absent: false), s spec. */
const CompactDesiredVolumeSchema = z.object({
  n: z.string(),
  u: z.string().optional(),
  p: PluginSchema,
  a: z.literal(1).optional(),
  d: z.literal(1).optional(),
  r: z.literal(1).optional(),
  s: DesiredVolumeSpecSchema.optional(),
});
/** A desired pod: i uid, s namespace, n name, h phase, c containers, v volumes. */
const CompactDesiredPodSchema = z.object({
  i: z.string(),
  s: z.string(),
  n: z.string(),
  h: z.string().optional(),
  c: z.array(ContainerStateSchema).optional(),
  v: z.array(CompactDesiredVolumeSchema).optional(),
});
/** A pod mount: i podUid, n podName (absent: i), s namespace, o outer volume name, m uncertain (absent: mounted), r remountRequired. */
const CompactPodMountSchema = z.object({
  i: z.string(),
  n: z.string().optional(),
  s: z.string().optional(),
  o: z.string(),
  m: z.literal(1).optional(),
  r: z.literal(1).optional(),
});
/** An actual volume: u unique name, p plugin, a uncertain attach, dp device path, ds device mount state (absent: not-mounted), dm device mount path, v pods. */
const CompactActualVolumeSchema = z.object({
  u: z.string(),
  p: PluginSchema,
  a: z.literal(1).optional(),
  dp: z.string().optional(),
  ds: z.enum(['mounted', 'uncertain']).optional(),
  dm: z.string().optional(),
  v: z.array(CompactPodMountSchema).optional(),
});
/** A mount health entry: q path under `<podsDir>/<podUid>/` or P full path, i podUid, u volume, k staging, t state, e error, c checkedAt, b since (absent: c). */
const CompactMountHealthSchema = z.object({
  q: z.string().optional(),
  P: z.string().optional(),
  i: z.string().optional(),
  u: z.string(),
  k: z.literal(1).optional(),
  t: MountHealthStateSchema.optional(),
  e: z.string().optional(),
  c: EpochMs,
  b: EpochMs.optional(),
});
/** A volume stats entry; see {@link encodeVolumeStats}. */
const CompactVolumeStatsSchema = z.object({
  i: z.string(),
  n: z.string(),
  u: z.string().optional(),
  p: PluginSchema,
  dr: z.string().optional(),
  q: z.string().optional(),
  P: z.string().optional(),
  pvc: z.tuple([z.string(), z.string()]).optional(),
  src: z.literal('csi').optional(),
  n6: z.tuple([Num, Num, Num, Num, Num, Num]).optional(),
  cond: z.tuple([z.boolean(), z.string()]).optional(),
  c: EpochMs,
  ms: z.number().nonnegative(),
  e: z.string().optional(),
});

/** The compact form: the full form with the four big arrays in their compact items, plus `encoding` and `podsDir`. */
export const CompactSnapshotSchema = z.looseObject({
  encoding: z.literal(COMPACT_ENCODING),
  /** The pods directory the relative paths (`q`) are under; `''` when none are. */
  podsDir: z.string(),
  desired: z.object({ pods: z.array(CompactDesiredPodSchema) }),
  actual: z.object({ volumes: z.array(CompactActualVolumeSchema) }),
  mountHealth: z.array(CompactMountHealthSchema),
  volumeStats: z.array(CompactVolumeStatsSchema).optional(),
});
/** A compact snapshot. */
export type CompactSnapshot = z.infer<typeof CompactSnapshotSchema>;
type CompactDesiredPod = z.infer<typeof CompactDesiredPodSchema>;
type CompactDesiredVolume = z.infer<typeof CompactDesiredVolumeSchema>;
type CompactActualVolume = z.infer<typeof CompactActualVolumeSchema>;
type CompactPodMount = z.infer<typeof CompactPodMountSchema>;
type CompactMountHealth = z.infer<typeof CompactMountHealthSchema>;
type CompactVolumeStats = z.infer<typeof CompactVolumeStatsSchema>;

const PLUGIN_INDEX = new Map(COMPACT_PLUGIN_NAMES.map((name, i) => [name, i]));

function encPlugin(name: string): number | string {
  return PLUGIN_INDEX.get(name) ?? name;
}

function decPlugin(p: number | string): string {
  return typeof p === 'number' ? (COMPACT_PLUGIN_NAMES[p] ?? '') : p;
}

/** The path relative to `<podsDir>/<podUid>/` when it is under it (exactly reversible), else the full path. */
function encPath(podsDir: string, podUid: string | null, path: string): { q: string } | { P: string } {
  if (podsDir !== '' && podUid !== null) {
    const prefix = `${podsDir}/${podUid}/`;
    if (path.startsWith(prefix)) return { q: path.slice(prefix.length) };
  }
  return { P: path };
}

function decPath(podsDir: string, podUid: string | null, c: { q?: string | undefined; P?: string | undefined }): string {
  if (c.q !== undefined) return `${podsDir}/${podUid ?? ''}/${c.q}`;
  return c.P ?? '';
}

/** The unique name a per-pod volume gets: `<plugin>/<podUid>-<name>` (GetUniqueVolumeNameFromSpecWithPod). */
function perPodUniqueName(plugin: string, podUid: string, name: string): string {
  return `${plugin}/${podUid}-${name}`;
}

function encodeDesiredVolume(podUid: string, v: DesiredVolume): CompactDesiredVolume {
  return {
    n: v.name,
    ...(v.uniqueVolumeName === perPodUniqueName(v.pluginName, podUid, v.name) ? {} : { u: v.uniqueVolumeName }),
    p: encPlugin(v.pluginName),
    ...(v.attachable ? { a: 1 as const } : {}),
    ...(v.deviceMountable ? { d: 1 as const } : {}),
    ...(v.reportedInUse ? { r: 1 as const } : {}),
    ...(v.spec !== undefined ? { s: v.spec } : {}),
  };
}

function decodeDesiredVolume(podUid: string, c: CompactDesiredVolume): DesiredVolume {
  const pluginName = decPlugin(c.p);
  return {
    name: c.n,
    uniqueVolumeName: c.u ?? perPodUniqueName(pluginName, podUid, c.n),
    pluginName,
    attachable: c.a === 1,
    deviceMountable: c.d === 1,
    reportedInUse: c.r === 1,
    ...(c.s !== undefined ? { spec: c.s } : {}),
  };
}

function encodeDesiredPod(p: DesiredPod): CompactDesiredPod {
  return {
    i: p.uid,
    s: p.namespace,
    n: p.name,
    ...(p.phase !== undefined ? { h: p.phase } : {}),
    ...(p.containers !== undefined ? { c: p.containers } : {}),
    ...(p.volumes.length > 0 ? { v: p.volumes.map((v) => encodeDesiredVolume(p.uid, v)) } : {}),
  };
}

function decodeDesiredPod(c: CompactDesiredPod): DesiredPod {
  return {
    uid: c.i,
    namespace: c.s,
    name: c.n,
    ...(c.h !== undefined ? { phase: c.h } : {}),
    ...(c.c !== undefined ? { containers: c.c } : {}),
    volumes: (c.v ?? []).map((v) => decodeDesiredVolume(c.i, v)),
  };
}

function encodePodMount(m: PodMount): CompactPodMount {
  return {
    i: m.podUid,
    ...(m.podName === m.podUid ? {} : { n: m.podName }),
    ...(m.podNamespace !== undefined ? { s: m.podNamespace } : {}),
    o: m.outerVolumeName,
    ...(m.mountState === 'uncertain' ? { m: 1 as const } : {}),
    ...(m.remountRequired ? { r: 1 as const } : {}),
  };
}

function decodePodMount(c: CompactPodMount): PodMount {
  return {
    podUid: c.i,
    podName: c.n ?? c.i,
    ...(c.s !== undefined ? { podNamespace: c.s } : {}),
    outerVolumeName: c.o,
    mountState: c.m === 1 ? 'uncertain' : 'mounted',
    remountRequired: c.r === 1,
  };
}

function encodeActualVolume(v: ActualVolume): CompactActualVolume {
  return {
    u: v.uniqueVolumeName,
    p: encPlugin(v.pluginName),
    ...(v.attachState === 'uncertain' ? { a: 1 as const } : {}),
    ...(v.devicePath !== '' ? { dp: v.devicePath } : {}),
    ...(v.deviceMountState !== 'not-mounted' ? { ds: v.deviceMountState } : {}),
    ...(v.deviceMountPath !== '' ? { dm: v.deviceMountPath } : {}),
    ...(v.pods.length > 0 ? { v: v.pods.map(encodePodMount) } : {}),
  };
}

function decodeActualVolume(c: CompactActualVolume): ActualVolume {
  return {
    uniqueVolumeName: c.u,
    pluginName: decPlugin(c.p),
    attachState: c.a === 1 ? 'uncertain' : 'attached',
    devicePath: c.dp ?? '',
    deviceMountState: c.ds ?? 'not-mounted',
    deviceMountPath: c.dm ?? '',
    pods: (c.v ?? []).map(decodePodMount),
  };
}

function encodeMountHealth(podsDir: string, h: MountHealth): CompactMountHealth {
  return {
    ...encPath(podsDir, h.podUid, h.path),
    ...(h.podUid !== null ? { i: h.podUid } : {}),
    u: h.volume,
    ...(h.kind === 'staging' ? { k: 1 as const } : {}),
    ...(h.state !== 'healthy' ? { t: h.state } : {}),
    ...(h.error !== null ? { e: h.error } : {}),
    c: h.checkedAt,
    ...(h.since !== h.checkedAt ? { b: h.since } : {}),
  };
}

function decodeMountHealth(podsDir: string, c: CompactMountHealth): MountHealth {
  const podUid = c.i ?? null;
  return {
    path: decPath(podsDir, podUid, c),
    podUid,
    volume: c.u,
    kind: c.k === 1 ? 'staging' : 'pod',
    state: c.t ?? 'healthy',
    error: c.e ?? null,
    checkedAt: c.c,
    since: c.b ?? c.c,
  };
}

/** i podUid, n volumeName, u unique name (absent: per-pod name), p plugin, dr driver, q/P path, pvc [ns, name], src csi (absent: statfs), n6 the six numbers (absent: all null), cond [abnormal, message], c collectedAt, ms durationMs, e error. */
function encodeVolumeStats(podsDir: string, s: VolumeStats): CompactVolumeStats {
  const numbers = [s.capacityBytes, s.availableBytes, s.usedBytes, s.inodes, s.inodesFree, s.inodesUsed] as const;
  return {
    i: s.podUid,
    n: s.volumeName,
    ...(s.uniqueVolumeName === perPodUniqueName(s.pluginName, s.podUid, s.volumeName) ? {} : { u: s.uniqueVolumeName }),
    p: encPlugin(s.pluginName),
    ...(s.driver !== null ? { dr: s.driver } : {}),
    ...encPath(podsDir, s.podUid, s.path),
    ...(s.persistentVolumeClaim !== null ? { pvc: [s.persistentVolumeClaim.namespace, s.persistentVolumeClaim.name] as [string, string] } : {}),
    ...(s.source === 'csi' ? { src: 'csi' as const } : {}),
    ...(numbers.every((n) => n === null) ? {} : { n6: [...numbers] as [number | null, number | null, number | null, number | null, number | null, number | null] }),
    ...(s.condition !== null ? { cond: [s.condition.abnormal, s.condition.message] as [boolean, string] } : {}),
    c: s.collectedAt,
    ms: s.durationMs,
    ...(s.error !== null ? { e: s.error } : {}),
  };
}

function decodeVolumeStats(podsDir: string, c: CompactVolumeStats): VolumeStats {
  const pluginName = decPlugin(c.p);
  const n = c.n6 ?? [null, null, null, null, null, null];
  return {
    podUid: c.i,
    volumeName: c.n,
    uniqueVolumeName: c.u ?? perPodUniqueName(pluginName, c.i, c.n),
    pluginName,
    driver: c.dr ?? null,
    path: decPath(podsDir, c.i, c),
    persistentVolumeClaim: c.pvc !== undefined ? { namespace: c.pvc[0], name: c.pvc[1] } : null,
    source: c.src ?? 'statfs',
    capacityBytes: n[0] ?? null,
    availableBytes: n[1] ?? null,
    usedBytes: n[2] ?? null,
    inodes: n[3] ?? null,
    inodesFree: n[4] ?? null,
    inodesUsed: n[5] ?? null,
    condition: c.cond !== undefined ? { abnormal: c.cond[0], message: c.cond[1] } : null,
    collectedAt: c.c,
    durationMs: c.ms,
    error: c.e ?? null,
  };
}

/**
 * The pods directory of a snapshot: the part before `/<podUid>/` of its first pod path (mount
 * health, else volume stats); `''` when it has none. Only a choice of prefix: paths not under it
 * are sent in full, so any value round-trips.
 */
export function inferPodsDir(snapshot: Snapshot): string {
  const candidates: { podUid: string | null; path: string }[] = [...snapshot.mountHealth, ...(snapshot.volumeStats ?? [])];
  for (const { podUid, path } of candidates) {
    if (podUid === null) continue;
    const at = path.indexOf(`/${podUid}/`);
    if (at > 0) return path.slice(0, at);
  }
  return '';
}

/**
 * Encodes snapshots, remembering each item's encoding (object and JSON text) by object identity
 * (a WeakMap per item kind): the snapshot builder keeps unchanged items as the same objects, so a
 * rebuild after one change encodes and serializes only the changed items. The caches are dropped
 * when `podsDir` changes.
 */
export class CompactSnapshotEncoder {
  private podsDir: string | null = null;
  private pods = new WeakMap<DesiredPod, Encoded<CompactDesiredPod>>();
  private volumes = new WeakMap<ActualVolume, Encoded<CompactActualVolume>>();
  private health = new WeakMap<MountHealth, Encoded<CompactMountHealth>>();
  private stats = new WeakMap<VolumeStats, Encoded<CompactVolumeStats>>();

  /** The compact form as an object. */
  encode(snapshot: Snapshot): CompactSnapshot {
    const { head, parts } = this.encodeParts(snapshot);
    return {
      ...head,
      desired: { pods: parts.pods.map((e) => e.value) },
      actual: { volumes: parts.volumes.map((e) => e.value) },
      mountHealth: parts.mountHealth.map((e) => e.value),
      ...(parts.volumeStats !== undefined ? { volumeStats: parts.volumeStats.map((e) => e.value) } : {}),
    };
  }

  /** `JSON.stringify(encode(snapshot))` (same value, other key order), from the items' cached texts. */
  encodeJson(snapshot: Snapshot): string {
    const { head, parts } = this.encodeParts(snapshot);
    const texts = (items: readonly Encoded<unknown>[]): string => items.map((e) => (e.json ??= JSON.stringify(e.value))).join(',');
    // `head` always has `encoding`, so its text ends with `}` after at least one member.
    const headJson = JSON.stringify(head);
    const stats = parts.volumeStats !== undefined ? `,"volumeStats":[${texts(parts.volumeStats)}]` : '';
    return `${headJson.slice(0, -1)},"desired":{"pods":[${texts(parts.pods)}]},"actual":{"volumes":[${texts(parts.volumes)}]},"mountHealth":[${texts(parts.mountHealth)}]${stats}}`;
  }

  private encodeParts(snapshot: Snapshot) {
    const podsDir = inferPodsDir(snapshot);
    if (podsDir !== this.podsDir) {
      this.podsDir = podsDir;
      this.pods = new WeakMap();
      this.volumes = new WeakMap();
      this.health = new WeakMap();
      this.stats = new WeakMap();
    }
    const { desired, actual, mountHealth, volumeStats, ...rest } = snapshot;
    return {
      head: { encoding: COMPACT_ENCODING as typeof COMPACT_ENCODING, podsDir, ...rest },
      parts: {
        pods: desired.pods.map((p) => cached(this.pods, p, encodeDesiredPod)),
        volumes: actual.volumes.map((v) => cached(this.volumes, v, encodeActualVolume)),
        mountHealth: mountHealth.map((h) => cached(this.health, h, (x) => encodeMountHealth(podsDir, x))),
        volumeStats: volumeStats?.map((st) => cached(this.stats, st, (x) => encodeVolumeStats(podsDir, x))),
      },
    };
  }
}

/** An item's compact encoding and, once serialized, its JSON text. */
interface Encoded<V> {
  value: V;
  json: string | null;
}

function cached<K extends object, V>(cache: WeakMap<K, Encoded<V>>, key: K, encode: (key: K) => V): Encoded<V> {
  let entry = cache.get(key);
  if (entry === undefined) {
    entry = { value: encode(key), json: null };
    cache.set(key, entry);
  }
  return entry;
}

/** Encodes one snapshot (no cache); see {@link CompactSnapshotEncoder} for repeated encodes. */
export function encodeCompactSnapshot(snapshot: Snapshot): CompactSnapshot {
  return new CompactSnapshotEncoder().encode(snapshot);
}

/** The full form of a (validated) compact snapshot, not yet checked against {@link SnapshotSchema}. */
export function decodeCompactSnapshot(compact: CompactSnapshot): Record<string, unknown> {
  const { encoding: _encoding, podsDir, desired, actual, mountHealth, volumeStats, ...rest } = compact;
  return {
    ...rest,
    desired: { pods: desired.pods.map(decodeDesiredPod) },
    actual: { volumes: actual.volumes.map(decodeActualVolume) },
    mountHealth: mountHealth.map((h) => decodeMountHealth(podsDir, h)),
    ...(volumeStats !== undefined ? { volumeStats: volumeStats.map((s) => decodeVolumeStats(podsDir, s)) } : {}),
  };
}

function isCompact(json: unknown): boolean {
  return typeof json === 'object' && json !== null && 'encoding' in json;
}

/**
 * Validates a snapshot in either form (compact when it has `encoding`, else full) and returns
 * the full form. A compact one is validated once in its own schema, decoded, and then checked by
 * {@link SnapshotSchema} (unique keys, defaults) like a full one.
 */
export function safeParseSnapshot(json: unknown): z.ZodSafeParseResult<Snapshot> {
  if (!isCompact(json)) return SnapshotSchema.safeParse(json);
  const compact = CompactSnapshotSchema.safeParse(json);
  if (!compact.success) return { success: false, error: compact.error as unknown as z.ZodError<Snapshot> };
  return SnapshotSchema.safeParse(decodeCompactSnapshot(compact.data));
}

/** {@link safeParseSnapshot} that throws the `ZodError`. */
export function parseSnapshot(json: unknown): Snapshot {
  const result = safeParseSnapshot(json);
  if (!result.success) throw result.error;
  return result.data;
}

/**
 * The `encoding` query parameter of a request target (`/api/v1/snapshot?encoding=full`): the
 * default `compact` when absent, null for any other value (the server answers 400).
 */
export function snapshotEncodingOf(url: string | undefined): SnapshotEncoding | null {
  const target = url ?? '/';
  const query = target.indexOf('?');
  const value = query < 0 ? null : new URLSearchParams(target.slice(query + 1)).get('encoding');
  if (value === null) return 'compact';
  return (SNAPSHOT_ENCODINGS as readonly string[]).includes(value) ? (value as SnapshotEncoding) : null;
}

/** The 400 message for an `encoding` that {@link snapshotEncodingOf} refuses. */
export const BAD_ENCODING_MESSAGE = `encoding: must be one of ${SNAPSHOT_ENCODINGS.join(', ')}`;
