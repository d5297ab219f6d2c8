import type { ReactNode } from 'react';
import { nodeRouteLayout } from '../../../../components/page/node-route-layout.tsx';

/** The node is resolved (or a 404) before anything streams; see nodeRouteLayout. */
export default function NodeLayout(props: { children: ReactNode; params: Promise<{ node: string }> }): Promise<ReactNode> {
  return nodeRouteLayout(props);
}
