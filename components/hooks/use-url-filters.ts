'use client';

import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useCallback, useMemo } from 'react';
import { parseVolumeFilters, volumeFiltersToSearch, type VolumeFilters } from '../../lib/dashboard/volume-filters.ts';

/**
 * The pods table's filters from the search params (`?ns=&state=&q=&sort=&dir=`), and a setter that
 * writes them back into the URL (replacing the history entry, keeping the scroll position).
 */
export function useUrlFilters(): [VolumeFilters, (next: VolumeFilters) => void] {
  const params = useSearchParams();
  const router = useRouter();
  const pathname = usePathname();
  const filters = useMemo(() => parseVolumeFilters(new URLSearchParams(params.toString())), [params]);
  const set = useCallback(
    (next: VolumeFilters) => {
      router.replace(`${pathname}${volumeFiltersToSearch(next)}`, { scroll: false });
    },
    [router, pathname],
  );
  return [filters, set];
}
