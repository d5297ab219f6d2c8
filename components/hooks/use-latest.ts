import { useCallback, useEffect, useRef } from 'react';

/**
 * A stable function returning the latest `value`: for work done on a click (copying a row's
 * commands) that needs the current snapshot, without handing the snapshot to memoized table
 * rows (which would then re-render on every delta).
 */
export function useLatest<T>(value: T): () => T {
  const ref = useRef(value);
  useEffect(() => {
    ref.current = value;
  }, [value]);
  return useCallback(() => ref.current, []);
}
