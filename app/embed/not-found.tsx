import { NotFoundMessage } from '../../components/not-found-message.tsx';

export default function EmbedNodeNotFound() {
  return <NotFoundMessage level="node" />;
}
