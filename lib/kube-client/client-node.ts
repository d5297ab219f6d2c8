/**
 * `@kubernetes/client-node` as a value the layer's modules receive instead of importing it: the
 * dashboard loads the client only when discovery is used (its build must neither bundle it nor
 * need it for static agent lists), while the agent imports it statically. Every module of
 * lib/kube-client imports client-node for types only and takes the classes it constructs
 * (`KubeConfig`, `ListWatch`, `Watch`, `Observable`) through a `clientNode` parameter.
 */

/** The `@kubernetes/client-node` module. */
export type ClientNode = typeof import('@kubernetes/client-node');

/**
 * Loads client-node at run time. The bundler is told to leave the import alone, so the dashboard
 * build neither bundles the Kubernetes client nor needs it for static configurations.
 */
export function loadClientNode(): Promise<ClientNode> {
  return import(/* webpackIgnore: true */ /* turbopackIgnore: true */ '@kubernetes/client-node');
}
