/**
 * The classes of `@kubernetes/client-node` that the agent hands to lib/kube-client (its
 * `clientNode` parameters), imported by name. A dynamic `import('@kubernetes/client-node')` of the
 * whole module would keep every generated API class and model in the image's bundle: 5.2 MB of
 * the 9 MB bundle, parsed and run at every start, where the agent needs about a third of it.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { ClientNode } from '../../lib/kube-client/client-node.ts';

export const clientNodeClasses: Pick<ClientNode, 'KubeConfig'> = { KubeConfig };
