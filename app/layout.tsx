import type { ReactNode } from 'react';
import { Providers } from '../components/page/providers.tsx';
import './globals.css';

export const metadata = {
  title: { default: 'VolumeScope', template: '%s · VolumeScope' },
  description: 'The kubelet volume manager’s state, live: which volume of which pod is stuck at which stage, why, and when the next retry comes.',
};

export const viewport = {
  colorScheme: 'light dark',
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
