// Next.js configuration for the VolumeScope dashboard.
//
// Framing: /embed/... may be framed by the origins in VOLUMESCOPE_FRAME_ANCESTORS (default
// 'self'); every other page denies framing. Next evaluates headers() when it builds
// (`next build`), so the variable must be set for the build; changing it needs a rebuild.
import { securityHeaderRules } from './lib/dashboard/frame-ancestors.js';

/** @type {import('next').NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // The agent transport's CA-verifying fetch (lib/dashboard/agent-transport.ts) runs from node_modules, unbundled.
  serverExternalPackages: ['undici'],
  // Type-checking runs once for the whole repository in `npm run typecheck`;
  // the dashboard build does not repeat it over agent and engine code.
  typescript: { ignoreBuildErrors: true },
  headers() {
    return Promise.resolve(securityHeaderRules(process.env.VOLUMESCOPE_FRAME_ANCESTORS));
  },
};

export default nextConfig;
