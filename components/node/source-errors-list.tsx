'use client';

import { memo } from 'react';
import type { SourceError } from '../../lib/api/index.ts';
import { EmptyState } from '../shared/empty-state.tsx';

/** Pod-source files that failed to parse. */
export const SourceErrorsList = memo(function SourceErrorsList({ errors }: { errors: readonly SourceError[] }) {
  if (errors.length === 0) return <EmptyState>Every pod-source file parses.</EmptyState>;
  return (
    <ul className="plain-list">
      {errors.map((e) => (
        <li key={e.file}>
          <code>{e.file}</code>: <span className="error-text">{e.message}</span>
        </li>
      ))}
    </ul>
  );
});
