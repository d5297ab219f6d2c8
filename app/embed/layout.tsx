import type { ReactNode } from 'react';

/** Runbook embeds: no header or navigation, compact type, readable at 600×400. */
export default function EmbedLayout({ children }: { children: ReactNode }) {
  return <main className="embed">{children}</main>;
}
