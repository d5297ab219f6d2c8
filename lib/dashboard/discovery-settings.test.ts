import { describe, expect, it } from 'vitest';
import { DEFAULT_DISCOVERY_SELECTOR, isDiscoveryConfigError, parseDiscoverySettings } from './discovery-settings.ts';
import { fakeDiscoveryFiles as files } from './testing/discovery-files.ts';

describe('discovery settings', () => {
  it('defaults: the service account namespace, the agent label, the service account token, port 7070', () => {
    // Arrange
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const sa = files({ readText: (p) => (p === '/var/run/secrets/kubernetes.io/serviceaccount/namespace' ? 'monitoring\n' : null) });

    // Act
    const settings = parseDiscoverySettings(env, sa);

    // Assert
    expect(settings).toEqual({
      namespace: 'monitoring',
      selector: DEFAULT_DISCOVERY_SELECTOR,
      tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
      defaultPort: 7070,
      api: { kind: 'in-cluster', variable: 'KUBERNETES_SERVICE_HOST' },
    });
  });

  it('without a service account namespace the namespace is volumescope', () => {
    expect(parseDiscoverySettings({ KUBECONFIG: 'kc.yaml' }, files()).namespace).toBe('volumescope');
  });

  it('takes every variable, relative paths against the working directory', () => {
    const settings = parseDiscoverySettings(
      {
        VOLUMESCOPE_DISCOVERY_NAMESPACE: 'vs-system',
        VOLUMESCOPE_DISCOVERY_SELECTOR: 'app=agent,tier in (node)',
        VOLUMESCOPE_DISCOVERY_TOKEN_FILE: 'secrets/token',
        VOLUMESCOPE_AGENT_PORT: '9090',
        KUBECONFIG: 'a.yaml:/etc/b.yaml',
      },
      files(),
    );
    expect(settings).toEqual({
      namespace: 'vs-system',
      selector: 'app=agent,tier in (node)',
      tokenFile: '/srv/dashboard/secrets/token',
      defaultPort: 9090,
      api: { kind: 'kubeconfig', files: ['/srv/dashboard/a.yaml', '/etc/b.yaml'], variable: 'KUBECONFIG' },
    });
  });

  it('falls back to ~/.kube/config', () => {
    const settings = parseDiscoverySettings({}, files({ exists: (p) => p === '/home/nobody/.kube/config' }));
    expect(settings.api).toEqual({ kind: 'kubeconfig', files: ['/home/nobody/.kube/config'], variable: 'KUBECONFIG' });
  });

  it.each([
    { name: 'a port that is not one', env: { KUBECONFIG: 'k', VOLUMESCOPE_AGENT_PORT: '70000' }, variable: 'VOLUMESCOPE_AGENT_PORT' },
    { name: 'a namespace that cannot be one', env: { KUBECONFIG: 'k', VOLUMESCOPE_DISCOVERY_NAMESPACE: 'Volume_Scope' }, variable: 'VOLUMESCOPE_DISCOVERY_NAMESPACE' },
    { name: 'no Kubernetes API at all', env: {}, variable: 'VOLUMESCOPE_DISCOVERY' },
  ])('$name is an error naming $variable', ({ env, variable }) => {
    const namesTheVariable = (err: unknown): boolean => isDiscoveryConfigError(err) && err.variable === variable && err.message.startsWith(`${variable}: `);
    expect(() => parseDiscoverySettings(env, files())).toThrow(expect.toSatisfy(namesTheVariable) as Error);
  });
});
