'use client';

import Link from 'next/link';
import { useEffect } from 'react';

/** The body of every route's `error.tsx`: what failed, and a retry. */
export function RouteError({ error, retry, what }: { error: unknown; retry: () => void; what: string }) {
  useEffect(() => {
    console.error(error);
  }, [error]);
  const message = error instanceof Error ? error.message : String(error);
  const digest = error instanceof Error && 'digest' in error && typeof error.digest === 'string' ? error.digest : null;
  return (
    <div className="gate" role="alert">
      <h1>
        <span aria-hidden="true">✕ </span>
        {`The ${what} could not be shown`}
      </h1>
      <p className="error-text">{message}</p>
      {digest !== null ? <p className="muted small">Error id (in the dashboard server’s log): {digest}</p> : null}
      <p className="toolbar">
        <button type="button" className="button button--primary" onClick={retry}>
          Try again
        </button>
        <Link className="button" href="/">
          All nodes
        </Link>
      </p>
    </div>
  );
}
