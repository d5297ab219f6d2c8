/**
 * The node page's table state as search params (`?ns=&state=&q=&sort=&dir=`): parsing,
 * serializing and applying it. The URL is the state: a copied link reopens the same view.
 */
import { VOLUME_STATES, rowPodName, type VolumeRow, type VolumeState } from './pipeline.ts';

/** A column the pods table sorts by. */
export type VolumeSortKey = 'pod' | 'volume' | 'state' | 'plugin' | 'retry';

/** Every sort key; `pod` (namespace, name, volume) is the default. */
export const VOLUME_SORT_KEYS: readonly VolumeSortKey[] = ['pod', 'volume', 'state', 'plugin', 'retry'];

/** The filters and sort of the pods table. */
export interface VolumeFilters {
  /** Only this namespace; `null` for all. */
  readonly ns: string | null;
  /** Only rows in this state; `null` for all. */
  readonly state: VolumeState | null;
  /** Case-insensitive text matched against pod, namespace, volume names, UID and error; `''` for none. */
  readonly q: string;
  readonly sort: VolumeSortKey;
  readonly dir: 'asc' | 'desc';
}

/** No filter, sorted by pod ascending. */
export const DEFAULT_VOLUME_FILTERS: VolumeFilters = { ns: null, state: null, q: '', sort: 'pod', dir: 'asc' };

/** Search params as Next hands them to pages, or a `URLSearchParams`. */
export type SearchParamsLike = URLSearchParams | Readonly<Record<string, string | readonly string[] | undefined>>;

function first(params: SearchParamsLike, name: string): string | null {
  if (params instanceof URLSearchParams) return params.get(name);
  const value = params[name];
  if (value === undefined) return null;
  return typeof value === 'string' ? value : (value[0] ?? null);
}

function isOneOf<T extends string>(values: readonly T[], value: string | null): value is T {
  return value !== null && (values as readonly string[]).includes(value);
}

/**
 * The filters in `params`. Unknown or empty values fall back to the default (a hand-edited URL
 * never breaks the page): `?state=bogus` shows every state.
 */
export function parseVolumeFilters(params: SearchParamsLike): VolumeFilters {
  const ns = first(params, 'ns');
  const state = first(params, 'state');
  const sort = first(params, 'sort');
  const dir = first(params, 'dir');
  return {
    ns: ns === null || ns === '' ? null : ns,
    state: isOneOf(VOLUME_STATES, state) ? state : null,
    q: (first(params, 'q') ?? '').trim(),
    sort: isOneOf(VOLUME_SORT_KEYS, sort) ? sort : DEFAULT_VOLUME_FILTERS.sort,
    dir: dir === 'desc' ? 'desc' : 'asc',
  };
}

/** The search string for `filters` (`?ns=default&state=backoff`), leaving defaults out; `''` when all are. */
export function volumeFiltersToSearch(filters: VolumeFilters): string {
  const params = new URLSearchParams();
  if (filters.ns !== null) params.set('ns', filters.ns);
  if (filters.state !== null) params.set('state', filters.state);
  if (filters.q !== '') params.set('q', filters.q);
  if (filters.sort !== DEFAULT_VOLUME_FILTERS.sort) params.set('sort', filters.sort);
  if (filters.dir !== DEFAULT_VOLUME_FILTERS.dir) params.set('dir', filters.dir);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function matchesText(row: VolumeRow, needle: string): boolean {
  const hay = [row.podName, row.namespace ?? '', row.podUid, row.volumeName, row.uniqueVolumeName, row.pluginName, row.operation?.lastError ?? ''];
  return hay.some((h) => h.toLowerCase().includes(needle));
}

function compareText(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}

const STATE_RANK = new Map(VOLUME_STATES.map((s, i) => [s, i]));

// Rows keep their identity across deltas, so their sort keys are computed once per row.
const podKeyCache = new WeakMap<VolumeRow, string>();

function podKey(row: VolumeRow): string {
  let key = podKeyCache.get(row);
  if (key === undefined) {
    key = `${rowPodName(row)}\u0000${row.podUid}\u0000${row.volumeName}`;
    podKeyCache.set(row, key);
  }
  return key;
}

function comparator(sort: VolumeSortKey): (a: VolumeRow, b: VolumeRow) => number {
  const byPod = (a: VolumeRow, b: VolumeRow): number => compareText(podKey(a), podKey(b));
  switch (sort) {
    case 'pod':
      return byPod;
    case 'volume':
      return (a, b) => compareText(a.volumeName, b.volumeName) || byPod(a, b);
    case 'plugin':
      return (a, b) => compareText(a.pluginName, b.pluginName) || byPod(a, b);
    case 'state':
      return (a, b) => (STATE_RANK.get(a.state) ?? 0) - (STATE_RANK.get(b.state) ?? 0) || byPod(a, b);
    case 'retry':
      return (a, b) => {
        const ra = a.operation?.retryAt ?? Number.POSITIVE_INFINITY;
        const rb = b.operation?.retryAt ?? Number.POSITIVE_INFINITY;
        return ra === rb ? byPod(a, b) : ra < rb ? -1 : 1;
      };
  }
}

/**
 * The rows that pass `filters`, sorted by `filters.sort` (ties broken by pod then volume, so the
 * order is total and stable); `desc` reverses it. Returns a new array; `rows` is not changed.
 */
export function applyVolumeFilters(rows: readonly VolumeRow[], filters: VolumeFilters): VolumeRow[] {
  const needle = filters.q.toLowerCase();
  const out = rows.filter(
    (r) =>
      (filters.ns === null || r.namespace === filters.ns) &&
      (filters.state === null || r.state === filters.state) &&
      (needle === '' || matchesText(r, needle)),
  );
  const cmp = comparator(filters.sort);
  out.sort(filters.dir === 'asc' ? cmp : (a, b) => cmp(b, a));
  return out;
}

/** The namespaces that occur in `rows`, sorted, for the namespace filter. */
export function namespacesOf(rows: readonly VolumeRow[]): string[] {
  const set = new Set<string>();
  for (const r of rows) if (r.namespace !== null) set.add(r.namespace);
  return [...set].sort(compareText);
}
