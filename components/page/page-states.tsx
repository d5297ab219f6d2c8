import Link from 'next/link';
import type { ReactNode } from 'react';

/** The body of every route's `loading.tsx`: a placeholder with the page's shape. */
export function PageSkeleton({ label }: { label: string }) {
  return (
    <div className="skeleton" aria-busy="true" role="status">
      <span className="visually-hidden">{`Loading ${label}…`}</span>
      <div className="skeleton__title" />
      <div className="skeleton__line" />
      <div className="skeleton__block" />
    </div>
  );
}

/** The body of the `not-found.tsx` files: what was not found and where to go. */
export function NotFoundPanel({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="gate" role="status">
      <h1>{title}</h1>
      {children}
      <p>
        <Link href="/">All nodes</Link>
      </p>
    </div>
  );
}

/** Shown instead of a page when the agent configuration is malformed. */
export function ConfigErrorPanel({ error }: { error: string }) {
  return (
    <div className="gate" role="alert">
      <h1>The dashboard’s agent configuration is invalid</h1>
      <p className="error-text">{error}</p>
      <p>
        Set <code>VOLUMESCOPE_AGENTS=name=url[,name=url…]</code> and <code>VOLUMESCOPE_AGENT_TOKENS=name=/path/to/token[,…]</code> (or{' '}
        <code>*=/path</code> for all), or <code>VOLUMESCOPE_DASHBOARD_CONFIG=/path/to/dashboard.json</code>, then restart the dashboard.
      </p>
    </div>
  );
}
