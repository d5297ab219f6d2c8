/**
 * People for the login tests: ServiceAccounts `viewer` and `operator` in a namespace of the
 * test's own, bound to deploy/'s ClusterRoles volumescope-viewer and volumescope-operator (deploy/
 * is applied first), and tokens for them (`kubectl create token`, 1 h).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cluster } from './cluster-context.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** A token of ServiceAccount `sa` in `namespace`, valid 1 h. */
export async function createToken(sa: string, namespace: string): Promise<string> {
  return (await cluster.kubectl(['create', 'token', sa, '-n', namespace, '--duration=1h'])).trim();
}

/** Applies deploy/ and the two accounts in `namespace`; returns their tokens. */
export async function createViewerAndOperator(namespace: string): Promise<{ viewer: string; operator: string }> {
  await cluster.kubectl(['apply', '-f', join(REPO, 'deploy', 'base', 'namespace.yaml')]);
  await cluster.kubectl(['apply', '-k', join(REPO, 'deploy')]);
  const binding = (role: string, sa: string): string =>
    [
      'apiVersion: rbac.authorization.k8s.io/v1',
      'kind: ClusterRoleBinding',
      `metadata: {name: ${namespace}-${sa}}`,
      `roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${role}}`,
      `subjects: [{kind: ServiceAccount, name: ${sa}, namespace: ${namespace}}]`,
    ].join('\n');
  const sa = (name: string): string => `apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ${name}, namespace: ${namespace}}`;
  await cluster.kubectl(['apply', '-f', '-'], {
    input: [`apiVersion: v1\nkind: Namespace\nmetadata: {name: ${namespace}}`, sa('viewer'), sa('operator'), binding('volumescope-viewer', 'viewer'), binding('volumescope-operator', 'operator')].join('\n---\n'),
  });
  return { viewer: await createToken('viewer', namespace), operator: await createToken('operator', namespace) };
}
