import { NotFoundMessage } from '../../components/not-found-message.tsx';

export default function NodeNotFound() {
  return <NotFoundMessage level="node" />;
}
