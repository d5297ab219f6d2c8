import Link from 'next/link';
import type { ReactNode } from 'react';
import { SessionMenu } from '../../components/auth/session-menu.tsx';

export default function DashboardLayout({ children }: { children: ReactNode }) {
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <Link href="/" className="app-header__brand">
          <span aria-hidden="true">◎ </span>VolumeScope
        </Link>
        <nav aria-label="Main">
          <Link href="/">Nodes</Link>
          <Link href="/volumes/attachments">Attachments</Link>
        </nav>
        <SessionMenu />
      </header>
      <main id="main" className="main">
        {children}
      </main>
    </>
  );
}
