'use client';

import { RouteError } from '../../../../components/page/route-states.tsx';

export default function NodeSegmentError({ error, retry }: { error: unknown; retry: () => void }) {
  return <RouteError error={error} retry={retry} what="node" />;
}
