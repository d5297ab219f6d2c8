import { describe, expect, it } from 'vitest';
import { exampleSnapshot } from '../api/snapshot-fixtures.ts';
import { deriveVolumeRows, type VolumeRow } from './pipeline.ts';
import { DEFAULT_VOLUME_FILTERS, applyVolumeFilters, namespacesOf, parseVolumeFilters, volumeFiltersToSearch } from './volume-filters.ts';

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
