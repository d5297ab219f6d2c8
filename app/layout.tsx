import type { ReactNode } from 'react';

export const metadata = {
  title: 'VolumeScope',
  description: 'Kubelet volume manager state, live.',
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
