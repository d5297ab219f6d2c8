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

function rowFilter(filters: VolumeFilters): (row: VolumeRow) => boolean {
  const needle = filters.q.toLowerCase();
  return (r) =>
    (filters.ns === null || r.namespace === filters.ns) &&
    (filters.state === null || r.state === filters.state) &&
    (needle === '' || matchesText(r, needle));
}

function rowOrder(filters: VolumeFilters): (a: VolumeRow, b: VolumeRow) => number {
  const cmp = comparator(filters.sort);
  return filters.dir === 'asc' ? cmp : (a, b) => cmp(b, a);
}

/**
 * The rows that pass `filters`, sorted by `filters.sort` (ties broken by pod then volume, so the
 * order is total and stable); `desc` reverses it. Returns a new array; `rows` is not changed.
 */
export function applyVolumeFilters(rows: readonly VolumeRow[], filters: VolumeFilters): VolumeRow[] {
  const out = rows.filter(rowFilter(filters));
  out.sort(rowOrder(filters));
  return out;
}

function sameFilters(a: VolumeFilters, b: VolumeFilters): boolean {
  return a.ns === b.ns && a.state === b.state && a.q === b.q && a.sort === b.sort && a.dir === b.dir;
}

/**
 * The index in sorted `rows` where `row` belongs: the first position whose row orders after it.
 * `null` when a different row orders equal to it (two rows with the same pod and volume), where
 * only a full stable sort gives `applyVolumeFilters`' order.
 */
function insertionIndex(rows: readonly VolumeRow[], row: VolumeRow, cmp: (a: VolumeRow, b: VolumeRow) => number): number | null {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = cmp(rows[mid] as VolumeRow, row);
    if (c === 0 && rows[mid] !== row) return null;
    if (c <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** {@link applyVolumeFilters} with memory; see {@link createVolumeFiltersSelector}. */
export type VolumeFiltersSelector = (rows: readonly VolumeRow[], filters: VolumeFilters) => readonly VolumeRow[];

/**
 * `applyVolumeFilters` for the successive row arrays of one table, updated instead of recomputed.
 * The rows selector (pipeline.ts) returns the same rows in the same order after a delta and a new
 * object only for a changed row, so when the filters are the same and the rows line up (same
 * length, same id at each index), only the changed rows are taken out of the previous result and
 * put back in by binary search: a flush that changes 30 of 10,000 rows costs 30 searches, not a
 * filter and sort of 10,000. Anything else (new filters, rows added or removed, many changes)
 * recomputes. The result always equals `applyVolumeFilters(rows, filters)`: the order is total,
 * so one sorted position exists per row; a tie between two different rows recomputes.
 */
export function createVolumeFiltersSelector(): VolumeFiltersSelector {
  let lastRows: readonly VolumeRow[] | null = null;
  let lastFilters: VolumeFilters | null = null;
  let lastOut: readonly VolumeRow[] = [];

  const update = (rows: readonly VolumeRow[], prev: readonly VolumeRow[], filters: VolumeFilters): VolumeRow[] | null => {
    if (rows.length !== prev.length) return null;
    // More changes than this and a full sort is about as cheap (and simpler).
    const maxChanges = Math.max(64, rows.length >>> 4);
    const changed: number[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as VolumeRow;
      const before = prev[i] as VolumeRow;
      if (row === before) continue;
      if (row.id !== before.id || changed.length === maxChanges) return null;
      changed.push(i);
    }
    const passes = rowFilter(filters);
    const cmp = rowOrder(filters);
    const out = [...lastOut];
    for (const i of changed) {
      const before = prev[i] as VolumeRow;
      const row = rows[i] as VolumeRow;
      if (passes(before)) {
        // The previous result holds `before` at the position its own (old) values sort to.
        const at = insertionIndex(out, before, cmp);
        if (at === null || out[at - 1] !== before) return null;
        out.splice(at - 1, 1);
      }
      if (passes(row)) {
        const at = insertionIndex(out, row, cmp);
        if (at === null) return null;
        out.splice(at, 0, row);
      }
    }
    return out;
  };

  return (rows, filters) => {
    if (rows === lastRows && lastFilters !== null && sameFilters(filters, lastFilters)) return lastOut;
    const updated = lastRows !== null && lastFilters !== null && sameFilters(filters, lastFilters) ? update(rows, lastRows, filters) : null;
    lastOut = updated ?? applyVolumeFilters(rows, filters);
    lastRows = rows;
    lastFilters = filters;
    return lastOut;
  };
}

/** The namespaces that occur in `rows`, sorted, for the namespace filter. */
export function namespacesOf(rows: readonly VolumeRow[]): string[] {
  const set = new Set<string>();
  for (const r of rows) if (r.namespace !== null) set.add(r.namespace);
  return [...set].sort(compareText);
}

/**
 * `namespacesOf` with memory: the previous (same) array while the rows keep their namespaces at
 * the same indices (what a delta that changes volume states or operations does), so the
 * namespace filter does not re-render on every flush.
 */
export function createNamespacesSelector(): (rows: readonly VolumeRow[]) => readonly string[] {
  let lastRows: readonly VolumeRow[] | null = null;
  let lastOut: readonly string[] = [];
  return (rows) => {
    const prev = lastRows;
    let same = prev !== null && prev.length === rows.length;
    for (let i = 0; same && prev !== null && i < rows.length; i++) same = (rows[i] as VolumeRow).namespace === (prev[i] as VolumeRow).namespace;
    if (!same) lastOut = namespacesOf(rows);
    lastRows = rows;
    return lastOut;
  };
}
