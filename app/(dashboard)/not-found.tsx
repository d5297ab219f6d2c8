import { NotFoundMessage } from '../../components/page/not-found-message.tsx';

export default function NodeNotFound() {
  return <NotFoundMessage level="node" />;
}
