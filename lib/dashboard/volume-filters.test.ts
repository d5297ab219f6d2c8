import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { exampleSnapshot, generatedOperation, largeSnapshot } from '../api/testing/snapshot-fixtures.ts';
import { VOLUME_STATES, deriveVolumeRows, type VolumeRow } from './pipeline.ts';
import {
  DEFAULT_VOLUME_FILTERS,
  VOLUME_SORT_KEYS,
  applyVolumeFilters,
  createNamespacesSelector,
  createVolumeFiltersSelector,
  namespacesOf,
  parseVolumeFilters,
  volumeFiltersToSearch,
  type VolumeFilters,
} from './volume-filters.ts';

describe('filters in the URL', () => {
  it.each([
    { name: 'no params are the defaults', search: '', expected: DEFAULT_VOLUME_FILTERS },
    { name: 'every param is read', search: '?ns=prod&state=backoff&q=%20pg%20&sort=retry&dir=desc', expected: { ns: 'prod', state: 'backoff', q: 'pg', sort: 'retry', dir: 'desc' } },
    { name: 'unknown values fall back to the defaults', search: '?state=bogus&sort=size&dir=up', expected: DEFAULT_VOLUME_FILTERS },
    { name: 'an empty namespace means all', search: '?ns=', expected: DEFAULT_VOLUME_FILTERS },
  ] as const)('$name', ({ search, expected }) => {
    expect(parseVolumeFilters(new URLSearchParams(search))).toEqual(expected);
  });

  it('Next-style search param records are read too (first value of an array)', () => {
    expect(parseVolumeFilters({ ns: ['a', 'b'], state: 'uncertain' })).toMatchObject({ ns: 'a', state: 'uncertain' });
  });

  it.each([
    { name: 'the defaults make no search string', filters: DEFAULT_VOLUME_FILTERS, search: '' },
    { name: 'only what differs from the defaults is written', filters: { ...DEFAULT_VOLUME_FILTERS, state: 'uncertain', dir: 'desc' }, search: '?state=uncertain&dir=desc' },
    { name: 'text is encoded', filters: { ...DEFAULT_VOLUME_FILTERS, q: 'a b&c' }, search: '?q=a+b%26c' },
  ] as const)('$name', ({ filters, search }) => {
    expect(volumeFiltersToSearch(filters)).toBe(search);
  });

  it('serializing then parsing gives the same filters', () => {
    const filters = { ns: 'team-1', state: 'running', q: 'vol-9', sort: 'state', dir: 'desc' } as const;
    expect(parseVolumeFilters(new URLSearchParams(volumeFiltersToSearch(filters)))).toEqual(filters);
  });
});

describe('applying filters and sorting', () => {
  const base = deriveVolumeRows(exampleSnapshot());
  const extra: VolumeRow = { ...(base[0] as VolumeRow), id: 'x/logs', podUid: 'x', podName: 'api-0', namespace: 'prod', volumeName: 'logs', uniqueVolumeName: 'kubernetes.io/empty-dir/x-logs', state: 'waiting' };
  const rows = [...base, extra];
  const names = (r: VolumeRow[]) => r.map((x) => `${x.podName}/${x.volumeName}`);

  it.each([
    { name: 'by namespace', search: '?ns=prod', expected: ['api-0/logs'] },
    { name: 'by state', search: '?state=uncertain', expected: ['db-0/pgdata'] },
    { name: 'by text in the last error, case-insensitively', search: '?q=deadlineexceeded', expected: ['db-0/pgdata'] },
    { name: 'by text in the pod UID', search: '?q=5c0a4c2e', expected: ['web-0/config', 'web-0/data'] },
    { name: 'sorted by pod (namespace first) by default', search: '', expected: ['db-0/pgdata', 'web-0/config', 'web-0/data', 'api-0/logs'] },
    { name: 'sorted by state, most urgent first', search: '?sort=state', expected: ['db-0/pgdata', 'api-0/logs', 'web-0/config', 'web-0/data'] },
    { name: 'sorted by volume, descending', search: '?sort=volume&dir=desc', expected: ['db-0/pgdata', 'api-0/logs', 'web-0/data', 'web-0/config'] },
    { name: 'sorted by next retry, rows without one last', search: '?sort=retry', expected: ['db-0/pgdata', 'web-0/config', 'web-0/data', 'api-0/logs'] },
  ])('$name', ({ search, expected }) => {
    expect(names(applyVolumeFilters(rows, parseVolumeFilters(new URLSearchParams(search))))).toEqual(expected);
  });

  it('the input rows are left untouched', () => {
    const copy = [...rows];
    applyVolumeFilters(rows, { ...DEFAULT_VOLUME_FILTERS, sort: 'volume', dir: 'desc' });
    expect(rows).toEqual(copy);
  });

  it('namespaces are listed once each, sorted', () => {
    expect(namespacesOf(rows)).toEqual(['default', 'prod']);
  });
});

describe('filtering and sorting successive rows with memory', () => {
  const start = deriveVolumeRows(largeSnapshot(60));
  const filters: fc.Arbitrary<VolumeFilters> = fc.record({
    ns: fc.constantFrom(null, 'load', 'other'),
    state: fc.constantFrom(null, ...VOLUME_STATES),
    q: fc.constantFrom('', 'load-1', 'unavailable'),
    sort: fc.constantFrom(...VOLUME_SORT_KEYS),
    dir: fc.constantFrom('asc' as const, 'desc' as const),
  });
  /** A change to the row at `index`: what a delta does to a row (state, operation, namespace). */
  const change = fc.record({ index: fc.nat({ max: start.length - 1 }), kind: fc.constantFrom('backoff', 'ready', 'namespace', 'pod'), n: fc.nat({ max: 5 }) });

  function applyChange(rows: VolumeRow[], c: { index: number; kind: string; n: number }): void {
    const row = rows[c.index] as VolumeRow;
    if (c.kind === 'backoff') rows[c.index] = { ...row, state: 'backoff', operation: generatedOperation(c.index, 1 + c.n) };
    else if (c.kind === 'ready') rows[c.index] = { ...row, state: 'ready', operation: null };
    else if (c.kind === 'namespace') rows[c.index] = { ...row, namespace: c.n % 2 === 0 ? 'other' : 'load' };
    // Same pod name as another row: the sort falls back to the pod UID.
    else rows[c.index] = { ...row, podName: `load-${c.n}` };
  }

  it('gives what applyVolumeFilters gives, flush after flush', () => {
    fc.assert(
      fc.property(filters, fc.array(fc.array(change, { maxLength: 12 }), { minLength: 1, maxLength: 6 }), fc.nat({ max: 5 }), filters, (f, flushes, switchAt, other) => {
        const select = createVolumeFiltersSelector();
        let rows = [...start];
        expect(select(rows, f)).toEqual(applyVolumeFilters(rows, f));
        flushes.forEach((changes, i) => {
          rows = [...rows];
          for (const c of changes) applyChange(rows, c);
          // Now and then the filters change between flushes too.
          const current = i === switchAt ? other : f;
          expect(select(rows, current)).toEqual(applyVolumeFilters(rows, current));
        });
      }),
      { numRuns: 150 },
    );
  });

  it('returns the same array for the same rows and equal filters, a new one when a row changed', () => {
    const select = createVolumeFiltersSelector();
    const rows = [...start];
    const first = select(rows, { ...DEFAULT_VOLUME_FILTERS, sort: 'retry' });
    expect(select(rows, { ...DEFAULT_VOLUME_FILTERS, sort: 'retry' })).toBe(first);
    const next = [...rows];
    next[7] = { ...(rows[7] as VolumeRow), state: 'backoff', operation: generatedOperation(7, 1) };
    const second = select(next, { ...DEFAULT_VOLUME_FILTERS, sort: 'retry' });
    expect(second).not.toBe(first);
    // Sorted by next retry: the one row with an operation comes first.
    expect(second[0]).toBe(next[7]);
  });

  it('a flush that changes a few rows updates the previous result without sorting every row again', () => {
    // Arrange
    const select = createVolumeFiltersSelector();
    const f = { ...DEFAULT_VOLUME_FILTERS, sort: 'retry' as const };
    select(start, f);
    const next = [...start];
    next[5] = { ...(start[5] as VolumeRow), state: 'backoff', operation: generatedOperation(5, 2) };
    const sort = vi.spyOn(Array.prototype, 'sort');

    // Act
    const shown = select(next, f);

    // Assert
    const sorts = sort.mock.calls.length;
    sort.mockRestore();
    expect(sorts).toBe(0);
    expect(shown).toEqual(applyVolumeFilters(next, f));
  });

  it('the namespaces stay the same array while no row changed its namespace', () => {
    const select = createNamespacesSelector();
    const rows = [...start];
    const first = select(rows);
    const stateOnly = rows.map((r, i) => (i === 3 ? { ...r, state: 'backoff' as const } : r));
    expect(select(stateOnly)).toBe(first);
    const moved = rows.map((r, i) => (i === 3 ? { ...r, namespace: 'other' } : r));
    expect(select(moved)).toEqual(['load', 'other']);
  });
});
