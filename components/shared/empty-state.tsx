import type { ReactNode } from 'react';

/** What a panel, table or list says when it has nothing to show: one sentence saying why. */
export function EmptyState({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}
