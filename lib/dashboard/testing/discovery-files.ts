/**
 * Test support: a {@link DiscoveryFiles} with nothing on disk (no service account, no
 * `~/.kube/config`), working directory `/srv/dashboard`; `overrides` replace single parts.
 */
import type { DiscoveryFiles } from '../discovery-settings.ts';

export function fakeDiscoveryFiles(overrides: Partial<DiscoveryFiles> = {}): DiscoveryFiles {
  return {
    cwd: '/srv/dashboard',
    readText: () => null,
    exists: () => false,
    homeDir: '/home/nobody',
    serviceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount',
    ...overrides,
  };
}
