import { PageSkeleton } from '../../../../../../components/page/page-states.tsx';

export default function Loading() {
  return <PageSkeleton label="the volume" />;
}
